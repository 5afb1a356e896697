/**
 * `runLimits` on the redis engine: once the receipts counted in Redis reach the budget, no worker
 * starts another model request for the Supervisor's agents, however late the supervisor's cancel
 * reaches them. Against a loopback model that calls a tool for ever (100 + 20 tokens a request).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
      // A request refused before it was sent still counts at its estimated size, as one a cancel
      // cuts off does on threads: the count errs high, never low.
      expect(supervisor.runUsage.usedTokens).toBeGreaterThanOrEqual(model.requests() * 120);
    } finally {
      await supervisor.close();
    }
  });
});
