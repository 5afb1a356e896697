/**
 * The run budget the workers count in Redis (`runLimits` on the redis engine) gets, at an agent's
 * end, what the agent spent beyond the receipts the workers counted for it: a worker journals a
 * receipt before it counts it, and one that died in between left the receipt in the journal (and
 * the agent's outcome) but not in the count every later request is checked against. A receipt
 * the workers counted is never counted twice, whatever reached the supervisor.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ScaleoutKeys } from '../../../src/engines/redis/keys.ts';
import { countEndedAgent, RedisRunBudget } from '../../../src/engines/redis/run-budget.ts';
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

const PREFIX = 'troupe-budget-end';
const LIMITS = { maxTotalTokens: 1_000_000, maxCostUsd: 0 };

describe(`the run budget in Redis at an agent's end${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let redis: Redis;
  let dir: string;
  let workers: TestWorker[] = [];
  let supervisor: RedisSupervisor | undefined;

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: null, enableAutoPipelining: true });
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-budget-end-'));
  });

  afterEach(async () => {
    await supervisor?.close();
    supervisor = undefined;
    await killWorkers(workers);
    workers = [];
  });

  afterAll(async () => {
    await redis?.quit();
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('adds what an agent spent beyond its counted receipts once, and nothing when they were all counted', async () => {
    const key = uniqueName('budget');
    const a = new RedisRunBudget(redis, key, LIMITS, 'a');
    const b = new RedisRunBudget(redis, key, LIMITS, 'b');
    await a.begin();
    await b.begin();
    await a.count(15, 0.25);
    await b.count(15, 0.25);
    await b.count(15, 0.25);
    // a's worker died before counting its second receipt; b's counts are all in.
    await countEndedAgent(redis, key, 'a', 30, 0.5);
    await countEndedAgent(redis, key, 'b', 30, 0.5);
    expect(await redis.hgetall(key)).toEqual({ t: '60', c: '1' });
    // Its count is forgotten with its end: a second end adds nothing.
    await countEndedAgent(redis, key, 'a', 30, 0.5);
    // Nor does the end of an agent whose worker keeps no count of it (an earlier version's, which
    // counted its receipts in the run's count alone).
    await redis.hincrby(key, 't', 30);
    await countEndedAgent(redis, key, 'old', 30, 0.5);
    expect(await redis.hgetall(key)).toEqual({ t: '90', c: '1' });
  });

  it('ends equal to what the agents spent when a worker never counted receipts it journalled', async () => {
    const queueName = uniqueName('budget-end');
    const recordFile = path.join(dir, `${queueName}.tsv`);
    // Its third record_step never returns: the worker is killed with the agent mid-run.
    const worker = await startWorker(
      server.url,
      ['--queue', queueName, '--prefix', PREFIX, '--concurrency', '1'],
      { TROUPE_SCALEOUT_RECORD: recordFile, TROUPE_SCALEOUT_HANG_AT: '3' },
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
      runLimits: { maxTotalTokens: LIMITS.maxTotalTokens },
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
    // As if the worker had died after journalling its last receipt and before counting it (15
    // tokens a request): the journal has it, the count in Redis does not.
    const budgetKey = await onlyKey(redis, new ScaleoutKeys(PREFIX, queueName).runBudget('*'));
    expect(Number(await redis.hget(budgetKey, 't'))).toBe(45);
    await redis.hincrby(budgetKey, 't', -15);
    await redis.hincrby(budgetKey, `t:${handle.id}`, -15);
    handle.cancel('the test cancels it');
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'failed', usage: { inputTokens: 30, outputTokens: 15 } });
    // Every receipt reached the supervisor: its own count had them all.
    expect(supervisor.runUsage.usedTokens).toBe(45);
    // The workers' count, which every later request is checked against, has them again.
    await vi.waitFor(async () => expect(Number(await redis.hget(budgetKey, 't'))).toBe(45), {
      timeout: 10_000,
      interval: 20,
    });
    expect(await redis.hexists(budgetKey, `t:${handle.id}`)).toBe(0);
  });
});

/** The one key matching `pattern`. */
async function onlyKey(redis: Redis, pattern: string): Promise<string> {
  const keys = await redis.keys(pattern);
  expect(keys).toHaveLength(1);
  return keys[0] ?? '';
}
