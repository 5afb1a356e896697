/**
 * Issue 14's done-means for the Supervisor: an agent in a worker thread, against a loopback model
 * that always calls a tool, stops at exactly its limit (counted by the server), reports usage per
 * request as it happens, and its outcome adds up to what the server reported.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentUsage } from '../../src/supervisor/events.ts';
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

function supervisorFor(loop: ToolLoopServer): Supervisor {
  const cwd = tempDir();
  writeFileSync(path.join(cwd, 'a.txt'), 'alpha\n');
  return new Supervisor({
    threads: 1,
    cwd,
    providers: { loop: { kind: 'openai', options: { baseURL: loop.baseURL, apiKey: 'k', maxRetries: 0 } } },
  });
}

describe('Supervisor against a model that always calls a tool', () => {
  it('stops the agent at exactly maxSteps requests and emits agent:usage per request', async () => {
    server = await startToolLoopServer();
    supervisor = supervisorFor(server);
    const usage: AgentUsage[] = [];
    supervisor.on('agent:usage', (event) => usage.push(event));
    const outcome = await supervisor.spawn('worker', {
      task: 'Review a.txt',
      model: 'gpt-4.1-mini',
      limits: { maxSteps: 4 },
    }).result;
    expect(server.requests()).toBe(4);
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'step_limit',
      steps: 4,
      usage: { inputTokens: 400, outputTokens: 80 },
    });
    expect(
      usage.map((event) => [event.step, event.inputTokens, event.outputTokens, event.estimated]),
    ).toEqual([
      [1, 100, 20, false],
      [2, 100, 20, false],
      [3, 100, 20, false],
      [4, 100, 20, false],
    ]);
    expect(usage.every((event) => typeof event.costUsd === 'number' && event.costUsd > 0)).toBe(true);
  });

  it('stops at the token budget with estimated usage when the server reports none', async () => {
    server = await startToolLoopServer({ usage: null });
    supervisor = supervisorFor(server);
    const usage: AgentUsage[] = [];
    supervisor.on('agent:usage', (event) => usage.push(event));
    const outcome = await supervisor.spawn('worker', {
      task: 'Review a.txt',
      model: 'gpt-4.1-mini',
      limits: { maxTotalTokens: 3000 },
    }).result;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'budget', error: { code: 'token_budget' } });
    expect(outcome.usage.estimated).toBe(true);
    expect(server.requests()).toBe(usage.length);
    expect(usage.every((event) => event.estimated)).toBe(true);
    const sum = usage.reduce((total, event) => total + event.inputTokens + event.outputTokens, 0);
    expect(outcome.usage.inputTokens + outcome.usage.outputTokens).toBe(sum);
    expect(sum).toBeGreaterThanOrEqual(3000);
  });
});
