/**
 * The supervisor settles its agents from BullMQ job state: the workers' end signals only say when
 * to look, so an agent whose end signal is lost is still settled by the reconcile. A bare BullMQ
 * worker stands in for `troupe worker` here: it sends no signal at all.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ScaleoutKeys } from '../../../src/engines/redis/keys.ts';
import { completedOutcome } from '../../../src/loop/outcome.ts';
import type { AgentJobData, BatchJobData } from '../../../src/protocol/redis.ts';
import { RedisSupervisor } from '../../../src/supervisor/redis-supervisor.ts';
import { definition, redisServerPath, skipReason, TestRedis, uniqueName } from './helpers.ts';

/** Calls of `command` the server has run so far (`INFO commandstats`; Lua's inner calls count too). */
async function calls(redis: Redis, command: string): Promise<number> {
  const text = await redis.info('commandstats');
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

describe(`the supervisor's reconcile on a real Redis${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let redis: Redis;
  let dir: string;

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url);
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-reconcile-'));
  });

  afterAll(async () => {
    redis?.disconnect();
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A supervisor on its own queue, and a bare worker running `process` for its jobs. */
  function setUp(process: (job: Job<AgentJobData>) => Promise<unknown>) {
    const queueName = uniqueName('reconcile');
    const supervisor = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      cwd: dir,
      reconcileIntervalMs: 50,
      // The bare worker runs jobs of one agent each (batches have their own test below).
      maxBatchSize: 1,
      restart: { maxRetries: 0 },
      definitions: [definition('quiet')],
    });
    const worker = new Worker<AgentJobData>(queueName, process, {
      connection: { url: server.url, maxRetriesPerRequest: null },
      prefix: 'troupe',
    });
    return { supervisor, worker, keys: new ScaleoutKeys('troupe', queueName) };
  }

  it('settles agents whose end signal never came: returned outcome, failed job, vanished job', async () => {
    const { supervisor, worker, keys } = setUp(async (job) => {
      const agentId = job.data.agent.agentId;
      if (job.data.agent.task === 'complete') return completedOutcome(agentId, { from: 'job state' });
      if (job.data.agent.task === 'fail') throw new Error('boom in the run');
      // 'vanish': the job hash is deleted while the job runs.
      await redis.del(keys.job(agentId));
      return new Promise(() => {});
    });
    try {
      const [complete, fail, vanish] = ['complete', 'fail', 'vanish'].map((task) =>
        supervisor.spawn('quiet', { task }),
      );
      const outcomes = await Promise.all([complete, fail, vanish].map((handle) => handle?.result));
      expect(outcomes[0]).toMatchObject({ status: 'completed', result: { from: 'job state' } });
      expect(outcomes[1]).toMatchObject({
        status: 'failed',
        reason: 'crashed',
        error: { code: 'job_failed', message: expect.stringContaining('boom in the run') },
      });
      expect(outcomes[2]).toMatchObject({ status: 'failed', reason: 'crashed', error: { code: 'job_lost' } });
    } finally {
      await worker.close(true);
      await supervisor.close();
    }
  });

  it('says that a job ended with no reason recorded, rather than "undefined"', async () => {
    const { supervisor, worker, keys } = setUp(async (job) => {
      // As BullMQ's finishing script leaves a job when Redis refuses its later writes (maxmemory).
      await redis.hset(keys.job(job.data.agent.agentId), 'finishedOn', Date.now());
      return new Promise(() => {});
    });
    try {
      const outcome = await supervisor.spawn('quiet', { task: 'ended' }).result;
      expect(outcome).toMatchObject({ status: 'failed', reason: 'crashed', error: { code: 'job_failed' } });
      const message = outcome.status === 'failed' ? outcome.error.message : '';
      expect(message).toContain('failed with no reason recorded in Redis');
      expect(message).not.toContain('undefined');
    } finally {
      await worker.close(true);
      await supervisor.close();
    }
  });

  it('settles agents of batch jobs whose end signals never came: outcome in the batch, failed batch, vanished batch', async () => {
    const queueName = uniqueName('reconcile-batch');
    const supervisor = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      cwd: dir,
      reconcileIntervalMs: 50,
      restart: { maxRetries: 0 },
      definitions: [definition('quiet')],
    });
    const keys = new ScaleoutKeys('troupe', queueName);
    const connection = { url: server.url, maxRetriesPerRequest: null };
    const queue = new Queue(queueName, { connection, prefix: 'troupe' });
    const worker = new Worker<BatchJobData>(
      queueName,
      async (job) => {
        const batchId = job.id ?? '';
        const { agents } = job.data;
        if (agents[0]?.task === 'complete') {
          const entries = agents.map((agent) => [
            agent.agentId,
            JSON.stringify({ outcome: completedOutcome(agent.agentId, { from: 'the batch' }) }),
          ]);
          await redis.hset(keys.batch(batchId), Object.fromEntries(entries));
          return null;
        }
        if (agents[0]?.task === 'fail') throw new Error('boom in the batch');
        await redis.del(keys.job(batchId));
        return new Promise(() => {});
      },
      { connection, prefix: 'troupe' },
    );
    try {
      const outcomes = [];
      for (const [index, task] of ['complete', 'fail', 'vanish'].entries()) {
        const pair = [supervisor.spawn('quiet', { task }), supervisor.spawn('quiet', { task })];
        // One batch job per pair.
        await vi.waitFor(async () => expect(await queue.getJobCountByTypes()).toBeGreaterThan(index), {
          interval: 10,
        });
        outcomes.push(pair.map((handle) => handle.result));
      }
      const [complete, fail, vanish] = await Promise.all(outcomes.map((pair) => Promise.all(pair)));
      for (const outcome of complete ?? []) {
        expect(outcome).toMatchObject({ status: 'completed', result: { from: 'the batch' } });
      }
      for (const outcome of fail ?? []) {
        expect(outcome).toMatchObject({
          status: 'failed',
          reason: 'crashed',
          error: { code: 'job_failed', message: expect.stringContaining('boom in the batch') },
        });
      }
      for (const outcome of vanish ?? []) {
        expect(outcome).toMatchObject({ status: 'failed', reason: 'crashed', error: { code: 'job_lost' } });
      }
      expect((await queue.getJobs(['completed', 'failed', 'active'])).map((job) => job.name)).toEqual(
        expect.arrayContaining(['agents', 'agents']),
      );
    } finally {
      await worker.close(true);
      await queue.close();
      await supervisor.close();
    }
  });

  it("reads a quiet running agent's job state less and less often", async () => {
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    let finish: (value: unknown) => void = () => {};
    const { supervisor, worker } = setUp(async (job) => {
      started();
      await new Promise((resolve) => {
        finish = resolve;
      });
      return completedOutcome(job.data.agent.agentId, 'late');
    });
    try {
      const handle = supervisor.spawn('quiet', { task: 'wait' });
      await running;
      const before = await calls(redis, 'hmget');
      // 40 reconcile intervals: one read per interval would be about 40.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const reads = (await calls(redis, 'hmget')) - before;
      // Doubling from one interval: reads at 1, 3, 7, 15 and 31 intervals after the job was added.
      expect(reads).toBeLessThanOrEqual(8);
      expect(reads).toBeGreaterThanOrEqual(1);
      finish(undefined);
      expect(await handle.result).toMatchObject({ status: 'completed', result: 'late' });
    } finally {
      await worker.close(true);
      await supervisor.close();
    }
  });
});
