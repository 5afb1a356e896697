/**
 * `retainSeconds: 0` end to end when the supervisor dies: its agent's `ended` signal goes to a
 * supervisor that is no longer there (SIGKILL, in a process of its own), while a worker (another
 * process) finishes the agent. The outcome must outlive the job's end until someone reads it: a
 * new supervisor that spawns the agent again gets it without running the agent again, and the
 * job, with its unmasked outcome, goes once it has been read.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ScaleoutKeys } from '../../../src/engines/redis/keys.ts';
import { RedisSupervisor } from '../../../src/supervisor/redis-supervisor.ts';
import { spawnChild } from '../../fixtures/children.ts';
import {
  definition,
  killWorkers,
  recordedSteps,
  recordToolModule,
  redisServerPath,
  repoRoot,
  skipReason,
  startWorker,
  stepperProvider,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

const PREFIX = 'troupe-lost-ended';
const STEPS = 4;
const LATENCY_MS = 150;
const childScript = path.join(repoRoot, 'test/fixtures/scaleout/supervisor-child.ts');

describe(`a lost ended signal with retainSeconds 0${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let redis: Redis;
  let dir: string;
  let workers: TestWorker[] = [];
  const children: { kill(): void; exited: Promise<void> }[] = [];
  const supervisors: RedisSupervisor[] = [];

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url);
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-lost-ended-'));
  });

  afterEach(async () => {
    for (const child of children.splice(0)) {
      child.kill();
      await child.exited;
    }
    await Promise.all(supervisors.splice(0).map((supervisor) => supervisor.close()));
    await killWorkers(workers);
    workers = [];
  });

  afterAll(async () => {
    redis?.disconnect();
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Starts the supervisor of supervisor-child.ts; resolves once its agent started on a worker. */
  async function childSupervisor(config: Record<string, unknown>) {
    const child = spawnChild(process.execPath, ['--import', 'tsx', childScript, JSON.stringify(config)], {
      cwd: repoRoot,
      env: { ...process.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const handle = {
      kill: () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      },
      exited,
    };
    children.push(handle);
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes(`spawned ${String(config.agentId)}`)) resolve();
      });
      void exited.then(() => reject(new Error(`the supervisor exited before its agent started:\n${output}`)));
    });
    return handle;
  }

  it('a new supervisor reads the outcome of an agent whose supervisor was SIGKILLed, and then removes its job', async () => {
    const queueName = uniqueName('lost-ended');
    const recordFile = path.join(dir, `${queueName}.tsv`);
    const keys = new ScaleoutKeys(PREFIX, queueName);
    const agentId = `agent-${queueName}`;
    workers.push(
      await startWorker(server.url, ['--queue', queueName, '--prefix', PREFIX], {
        TROUPE_SCALEOUT_RECORD: recordFile,
      }),
    );
    const first = await childSupervisor({
      url: server.url,
      queueName,
      prefix: PREFIX,
      cwd: dir,
      agentId,
      steps: STEPS,
      latencyMs: LATENCY_MS,
    });
    await vi.waitFor(() => expect(recordedSteps(recordFile).length).toBeGreaterThanOrEqual(1), {
      timeout: 20_000,
      interval: 20,
    });
    // Dies mid-run: the `ended` signal the worker sends at the agent's end is never read.
    first.kill();
    await first.exited;
    await vi.waitFor(async () => expect(await redis.hget(keys.job(agentId), 'finishedOn')).not.toBeNull(), {
      timeout: 20_000,
      interval: 20,
    });
    // Unread, the job (and its outcome) is kept, with a bounded TTL: set by the worker as BullMQ
    // tells it the job completed, a round trip after BullMQ's script wrote finishedOn.
    await vi.waitFor(async () => expect(await redis.pttl(keys.job(agentId))).toBeGreaterThan(0), {
      interval: 20,
    });
    expect(await redis.pttl(keys.job(agentId))).toBeLessThanOrEqual(24 * 3_600_000);

    const second = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      prefix: PREFIX,
      retainSeconds: 0,
      maxBatchSize: 1,
      reconcileIntervalMs: 100,
      providers: { stepper: stepperProvider(STEPS, LATENCY_MS) },
      definitions: [definition('stepper', { tools: ['record_step', 'complete_task'] })],
      toolModules: [{ module: recordToolModule }],
      compat: false,
      cwd: dir,
    });
    supervisors.push(second);
    const outcome = await second.spawn('stepper', { id: agentId, task: 'Steps.', resume: true }).result;
    expect(outcome).toMatchObject({ status: 'completed', agentId });
    // Not run again: each step once, all by the first run.
    expect(recordedSteps(recordFile).map(([id, note]) => [id, note])).toEqual(
      Array.from({ length: STEPS }, (_, index) => [agentId, `step ${index + 1}`]),
    );
    // Read: the job goes, with its outcome.
    await vi.waitFor(async () => expect(await redis.exists(keys.job(agentId))).toBe(0), { interval: 20 });
    expect(await redis.exists(keys.journal(agentId))).toBe(0);
  }, 60_000);
});
