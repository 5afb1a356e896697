/**
 * An agent the redis engine ends itself, not its worker: cancelled while its worker is dead, it
 * is settled after `graceMs` (the worker's job lock has not expired, so no other worker takes
 * it). It made model requests first: its outcome carries what its journal says it spent, and
 * `runUsage` counts it. Before, it said 0 tokens.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisSupervisor } from '../../../src/supervisor/redis-supervisor.ts';
import {
  definition,
  killWorkers,
  recordedSteps,
  recordToolModule,
  redisServerPath,
  skipReason,
  startWorker,
  stepperProvider,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

const PREFIX = 'troupe-stop-usage';

describe(`an agent the redis engine ends itself carries what its journal says it spent${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let dir: string;
  let workers: TestWorker[] = [];
  let supervisor: RedisSupervisor | undefined;

  beforeAll(async () => {
    server = await TestRedis.start();
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-stop-usage-'));
  });

  afterEach(async () => {
    await supervisor?.close();
    supervisor = undefined;
    await killWorkers(workers);
    workers = [];
  });

  afterAll(async () => {
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('cancelled while its worker is dead: settled after graceMs with its journal totals', async () => {
    const queueName = uniqueName('stop-usage');
    const recordFile = path.join(dir, `${queueName}.tsv`);
    // Its third record_step never returns: the worker is killed with the agent mid-run.
    const worker = await startWorker(
      server.url,
      ['--queue', queueName, '--prefix', PREFIX, '--concurrency', '1'],
      {
        TROUPE_SCALEOUT_RECORD: recordFile,
        TROUPE_SCALEOUT_HANG_AT: '3',
      },
    );
    workers = [worker];
    supervisor = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      prefix: PREFIX,
      providers: { stepper: stepperProvider(5) },
      definitions: [definition('stepper', { tools: ['record_step', 'complete_task'] })],
      toolModules: [{ module: recordToolModule }],
      compat: false,
      cwd: dir,
      graceMs: 300,
    });
    const handle = supervisor.spawn('stepper', { task: 'Stepper.' });
    await vi.waitFor(
      () =>
        expect(recordedSteps(recordFile).some(([id, note]) => id === handle.id && note === 'step 3')).toBe(
          true,
        ),
      { timeout: 60_000, interval: 20 },
    );
    worker.kill('SIGKILL');
    await worker.exited;
    handle.cancel('the test cancels it');
    const outcome = await handle.result;
    // Three requests (10 input and 5 output tokens each, priced at 0) before the worker died.
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'cancelled',
      usage: { inputTokens: 30, outputTokens: 15 },
      costUsd: 0,
      steps: 3,
    });
    expect(supervisor.runUsage.usedTokens).toBe(45);
  });
});
