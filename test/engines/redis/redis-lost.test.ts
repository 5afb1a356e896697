/**
 * A Redis server that goes away mid-run and does not come back: commands wait through a restart,
 * but not for ever. After `redisDownTimeoutMs` the supervisor's agents fail with
 * `redis_unreachable`, naming the server, later spawns fail the same way, and `close()` returns.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisSupervisor } from '../../../src/supervisor/redis-supervisor.ts';
import {
  definition,
  killWorkers,
  nextEvent,
  recordToolModule,
  redisServerPath,
  skipReason,
  startWorker,
  stepperProvider,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

describe(`the redis backend when Redis is lost for good${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let dir: string;
  let workers: TestWorker[] = [];

  beforeAll(async () => {
    server = await TestRedis.start();
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-redis-lost-'));
  });

  // A test that times out leaves its server stopped: the next steps must find it running.
  let stopped: number | undefined;
  afterEach(() => {
    if (stopped !== undefined) process.kill(stopped, 'SIGCONT');
    stopped = undefined;
  });

  afterAll(async () => {
    await killWorkers(workers);
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function supervisorOn(queueName: string): RedisSupervisor {
    return new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      providers: { stepper: stepperProvider(10_000, 20) },
      definitions: [definition('stepper', { tools: ['record_step', 'complete_task'] })],
      toolModules: [{ module: recordToolModule }],
      compat: false,
      cwd: dir,
      redisDownTimeoutMs: 500,
    });
  }

  it('fails the running agents with redis_unreachable when a stalled Redis answers nothing past redisDownTimeoutMs', async () => {
    const queueName = uniqueName('stalled');
    workers = [await startWorker(server.url, ['--queue', queueName])];
    const supervisor = supervisorOn(queueName);
    const pid = server.pid;
    if (pid === undefined) throw new Error('no redis-server');
    try {
      const tool = nextEvent(supervisor, 'agent:tool');
      const handle = supervisor.spawn('stepper', { task: 'Step.' });
      await tool;
      // Its connections stay open: nothing but an unanswered command says it is gone.
      stopped = pid;
      process.kill(pid, 'SIGSTOP');
      const outcome = await handle.result;
      expect(outcome).toMatchObject({
        status: 'failed',
        reason: 'crashed',
        error: { code: 'redis_unreachable' },
      });
      expect(outcome.status === 'failed' ? outcome.error.message : '').toContain(
        `Redis at redis://127.0.0.1:${server.port} did not answer for 500 ms`,
      );
      await supervisor.close();
    } finally {
      process.kill(pid, 'SIGCONT');
      stopped = undefined;
      await supervisor.close();
      await killWorkers(workers);
    }
  });

  it('fails the running agents with redis_unreachable once Redis stays away past redisDownTimeoutMs', async () => {
    const queueName = uniqueName('lost');
    workers = [await startWorker(server.url, ['--queue', queueName])];
    const supervisor = supervisorOn(queueName);
    try {
      const tool = nextEvent(supervisor, 'agent:tool');
      const handles = [0, 1].map((i) => supervisor.spawn('stepper', { task: `Step ${i}.` }));
      await tool;
      await server.stop();
      const outcomes = await Promise.all(handles.map((handle) => handle.result));
      for (const outcome of outcomes) {
        expect(outcome).toMatchObject({
          status: 'failed',
          reason: 'crashed',
          error: { code: 'redis_unreachable' },
        });
        expect(outcome.status === 'failed' ? outcome.error.message : '').toContain(
          `Lost the connection to Redis at redis://127.0.0.1:${server.port}`,
        );
      }
      const late = await supervisor.spawn('stepper', { task: 'Later.' }).result;
      expect(late).toMatchObject({ status: 'failed', error: { code: 'redis_unreachable' } });
    } finally {
      await supervisor.close();
    }
  });

  it('refuses a redisDownTimeoutMs that is not a non-negative number', () => {
    expect(() => new RedisSupervisor({ redisUrl: server.url, redisDownTimeoutMs: -1 })).toThrow(
      /redisDownTimeoutMs/,
    );
  });
});
