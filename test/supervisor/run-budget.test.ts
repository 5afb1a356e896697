/**
 * `runLimits`: a budget across every agent of a Supervisor. Against a loopback model that calls a
 * tool for ever (and counts the requests it gets), the agents are cancelled once their requests
 * together reach the budget, and a later spawn fails without asking the model anything.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.ts';
import type { RunBudgetSpent } from '../../src/supervisor/run-budget.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { startToolLoopServer, type ToolLoopServer } from '../fixtures/loopback/tool-loop-server.ts';
import { tempDir } from './helpers.ts';

let server: ToolLoopServer | undefined;
let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
  await server?.close();
  server = undefined;
});

function supervisorFor(loop: ToolLoopServer, runLimits: Record<string, number>): Supervisor {
  const cwd = tempDir();
  writeFileSync(path.join(cwd, 'a.txt'), 'alpha\n');
  return new Supervisor({
    threads: 2,
    cwd,
    providers: { loop: { kind: 'openai', options: { baseURL: loop.baseURL, apiKey: 'k', maxRetries: 0 } } },
    runLimits,
  });
}

describe('runLimits across every agent of a Supervisor', () => {
  it('cancels every agent once their tokens reach the budget, and fails later spawns with reason budget', async () => {
    server = await startToolLoopServer(); // 100 + 20 tokens per request
    const sup = supervisorFor(server, { maxTotalTokens: 1200 });
    supervisor = sup;
    const spent: RunBudgetSpent[] = [];
    sup.on('supervisor:budget', (event) => spent.push(event));
    const receipts: number[] = [];
    sup.on('agent:usage', (event) => receipts.push(event.inputTokens + event.outputTokens));
    const handles = Array.from({ length: 3 }, (_, i) =>
      sup.spawn('worker', { task: `Review a.txt (${i})`, model: 'gpt-4.1-mini', limits: { maxSteps: 1000 } }),
    );
    const outcomes = await Promise.all(handles.map((handle) => handle.result));
    for (const outcome of outcomes) {
      expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
      expect(outcome.status === 'failed' ? outcome.error.message : '').toContain(
        'the run budget is spent: The agents used',
      );
    }
    expect(spent).toHaveLength(1);
    expect(spent[0]).toMatchObject({
      code: 'run_token_budget',
      limits: { maxTotalTokens: 1200, maxCostUsd: 0 },
    });
    // Every request was counted, those the cancel cut off with estimated usage, also one cut off
    // before it reached the server (at most one per agent). Past the budget, only what the agents
    // sent before their cancel reached them (not bounded exactly: cancels cross threads); without
    // the budget they would have sent 3,000.
    const requests = server.requests();
    expect(receipts.length).toBeGreaterThanOrEqual(requests);
    expect(receipts.length).toBeLessThanOrEqual(requests + handles.length);
    expect(sup.runUsage.usedTokens).toBe(receipts.reduce((sum, tokens) => sum + tokens, 0));
    expect(requests).toBeGreaterThanOrEqual(10);
    expect(requests).toBeLessThan(40);

    const late = await sup.spawn('worker', { task: 'Review a.txt', model: 'gpt-4.1-mini' }).result;
    expect(late).toMatchObject({ status: 'failed', reason: 'budget', error: { code: 'run_token_budget' } });
    expect(server.requests()).toBe(requests);
    expect(sup.runUsage.spent).toEqual(spent[0]);
  });

  it('stops at a cost budget, counted from the model prices', async () => {
    server = await startToolLoopServer();
    const sup = supervisorFor(server, { maxCostUsd: 0.0005 });
    supervisor = sup;
    const outcome = await sup.spawn('worker', {
      task: 'Review a.txt',
      model: 'gpt-4.1-mini',
      limits: { maxSteps: 1000 },
    }).result;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
    const usage = sup.runUsage;
    expect(usage.spent?.code).toBe('run_cost_budget');
    expect(usage.usedCostUsd).toBeGreaterThanOrEqual(0.0005);
    expect(outcome.costUsd).toBeCloseTo(usage.usedCostUsd, 10);
  });

  it('refuses a budget that is not a non-negative number, and has none by default', () => {
    expect(() => new Supervisor({ runLimits: { maxTotalTokens: -1 } })).toThrow(UserError);
    expect(() => new Supervisor({ runLimits: { maxCostUsd: Number.NaN } })).toThrow(/runLimits\.maxCostUsd/);
    expect(new Supervisor().runUsage).toEqual({
      usedTokens: 0,
      usedCostUsd: 0,
      limits: { maxTotalTokens: 0, maxCostUsd: 0 },
      spent: undefined,
    });
  });
});
