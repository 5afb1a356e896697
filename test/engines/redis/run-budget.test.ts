/**
 * `runLimits` on the redis engine: once the receipts counted in Redis reach the budget, no worker
 * starts another model request for the Supervisor's agents, however late the supervisor's cancel
 * reaches them; `troupe fanout`'s run budget is held the same way. Against a loopback model that
 * calls a tool for ever (100 + 20 tokens a request).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTerminal } from '../../../src/journal/events.ts';
import { loadPlan } from '../../../src/run-dir/plan.ts';
import { chooseProvider } from '../../../src/run-dir/provider-choice.ts';
import { RunDirWriter } from '../../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../../src/run-dir/session.ts';
import { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { startToolLoopServer, type ToolLoopServer } from '../../fixtures/loopback/tool-loop-server.ts';
import { tempDir } from '../../fixtures/temp-dirs.ts';
import {
  killWorkers,
  redisServerPath,
  skipReason,
  startWorker,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

/** Blocks this thread (the supervisor's) for `ms`: its cancel cannot leave meanwhile. */
function blockThread(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe(`runLimits on the redis engine${skipReason}`, { skip: redisServerPath === undefined }, () => {
  let server: TestRedis;
  let model: ToolLoopServer;
  let workers: TestWorker[] = [];
  const queue = uniqueName('budget');

  beforeAll(async () => {
    server = await TestRedis.start();
    model = await startToolLoopServer();
    workers = [
      await startWorker(server.url, ['--concurrency', '8', '--queue', queue], { OPENAI_API_KEY: 'k' }),
    ];
  });

  afterAll(async () => {
    await killWorkers(workers);
    await model?.close();
    await server?.destroy();
  });

  it('starts no model request once the budget counted in Redis is spent, whenever the cancel arrives', async () => {
    const cwd = tempDir('troupe-redis-budget-');
    writeFileSync(path.join(cwd, 'a.txt'), 'alpha\n');
    const supervisor = new Supervisor({
      backend: 'redis',
      redisUrl: server.url,
      queueName: queue,
      cwd,
      providers: { loop: { kind: 'openai', options: { baseURL: model.baseURL, maxRetries: 0 } } },
      // Spent by the first request of any agent.
      runLimits: { maxTotalTokens: 100 },
    });
    try {
      // The supervisor is slow to act on the spent budget (a busy event loop, a far Redis): its
      // cancel leaves a second after the receipt that spends it. The workers must not need it.
      let blocked = false;
      supervisor.on('agent:usage', () => {
        if (blocked) return;
        blocked = true;
        blockThread(1500);
      });
      const handles = Array.from({ length: 3 }, (_, i) =>
        supervisor.spawn('worker', {
          task: `Review a.txt (${i})`,
          model: 'gpt-4.1-mini',
          limits: { maxSteps: 1000 },
        }),
      );
      const outcomes = await Promise.all(handles.map((handle) => handle.result));
      for (const outcome of outcomes) {
        expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
        expect(outcome.status === 'failed' ? outcome.error.message : '').toContain('the run budget is spent');
      }
      // Only the requests in flight when the budget was spent: at most one per agent, its first.
      expect(model.requests()).toBeGreaterThanOrEqual(1);
      expect(model.requests()).toBeLessThanOrEqual(handles.length);
      expect(supervisor.runUsage.spent?.code).toBe('run_token_budget');
      // Every request sent counts what it used (one refused at admission was never sent and
      // counts nothing).
      expect(supervisor.runUsage.usedTokens).toBeGreaterThanOrEqual(model.requests() * 120);
      // Each journal ends with the one terminal event delivered, with the same totals.
      for (const [index, handle] of handles.entries()) {
        const journal = await supervisor.journal(handle.id);
        const ends = journal.filter(isTerminal);
        expect(ends).toHaveLength(1);
        expect(journal.at(-1)).toBe(ends[0]);
        expect(ends[0]).toMatchObject({
          type: 'Failed',
          reason: 'cancelled',
          rounds: outcomes[index]?.rounds,
        });
        expect(ends[0]?.usage).toEqual(outcomes[index]?.usage);
      }
    } finally {
      await supervisor.close();
    }
  });

  it("troupe fanout's run budget (--max-run-tokens), less what earlier sessions used, is counted in Redis too", async () => {
    const cwd = tempDir('troupe-redis-fanout-budget-');
    writeFileSync(path.join(cwd, 'a.txt'), 'alpha\n');
    const planFile = path.join(cwd, 'plan.yaml');
    writeFileSync(
      planFile,
      [
        'cwd: .',
        'agent: worker',
        'model: gpt-4.1-mini',
        'concurrency: 3',
        'limits: { maxSteps: 1000 }',
        // Spent by the first request of any agent (with what an earlier session used).
        'runLimits: { maxTotalTokens: 1000 }',
        'runs:',
        ...Array.from({ length: 6 }, (_, i) => `  - task: Review a.txt (${i})`),
      ].join('\n'),
    );
    const { plan, definitions } = await loadPlan(planFile);
    const provider = chooseProvider({ flag: 'openai', options: { baseURL: model.baseURL, maxRetries: 0 } });
    const runPlan = resolveRunPlan(plan, provider, { backend: 'redis' }, undefined);
    const writer = RunDirWriter.create(path.join(cwd, 'run'), runPlan);
    const before = model.requests();
    let blocked = false;
    const session = new FanoutSession({
      plan: runPlan,
      writer,
      work: runPlan.runs.slice(1).map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false })),
      kind: 'resume',
      // An earlier session's agent used 900 of the 1000 tokens: this one may use 100.
      existing: [
        {
          index: 0,
          agentId: runPlan.runs[0]?.agentId ?? 'first',
          parentId: null,
          agent: 'worker',
          attempt: 1,
          status: 'completed',
          answer: 'done',
          usage: { inputTokens: 800, outputTokens: 100, cachedInputTokens: 0, reasoningTokens: 0 },
          costUsd: null,
          rounds: 1,
          hostId: null,
          restarts: 0,
          startedAt: null,
          endedAt: new Date().toISOString(),
        },
      ],
      definitions,
      supervisor: { redisUrl: server.url, queueName: queue },
      onEvent: (event) => {
        // The CLI is slow to act on the spent budget (a busy event loop, a far Redis): its cancel
        // leaves a second after the receipt that spends it. The workers must not need it.
        if (event.type !== 'usage' || blocked) return;
        blocked = true;
        blockThread(1500);
      },
    });
    const { summary } = await session.run();
    const requests = model.requests() - before;
    // Only the requests in flight when the budget was spent: at most one per running agent.
    expect(requests).toBeGreaterThanOrEqual(1);
    expect(requests).toBeLessThanOrEqual(runPlan.concurrency);
    expect(summary.budgetSpent).toBeDefined();
    // Every running item of this session is cancelled (which `troupe resume` runs again), none
    // failed for good by the Supervisor's spent budget; the items queued behind `concurrency` were
    // not spawned at all: they are not run, which `troupe resume` starts.
    expect(session.lines.slice(1).map((line) => [line.status, line.reason])).toEqual(
      Array(runPlan.concurrency).fill(['failed', 'cancelled']),
    );
    expect(summary.counts.notRun).toBe(5 - runPlan.concurrency);
  });
});
