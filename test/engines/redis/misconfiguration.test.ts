import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisSupervisor } from '../../../src/supervisor/redis-supervisor.ts';
import { readResults, startCli } from '../../run-dir/helpers.ts';
import {
  killWorkers,
  nextEvent,
  redisServerPath,
  skipReason,
  startWorker,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return typeof address === 'object' && address !== null ? address.port : 1;
}

const env = {
  ...process.env,
  OPENAI_API_KEY: '',
  ANTHROPIC_API_KEY: '',
  OPENAI_BASE_URL: '',
  TROUPE_REDIS_URL: '',
};

describe('a misconfigured redis backend says so before anything runs', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-misconfig-'));
    writeFileSync(path.join(dir, 'plan.yaml'), 'agent: worker\nruns:\n  - task: First.\n  - task: Second.\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('an unreachable Redis URL fails at once with a clear message and leaves no run directory', async () => {
    const url = `redis://127.0.0.1:${await closedPort()}`;
    const out = path.join(dir, 'never');
    const run = startCli(['fanout', 'plan.yaml', '--backend', 'redis', '--redis', url, '--out', out], {
      cwd: dir,
      env,
    });
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain('redis_unreachable');
    expect(run.stderr()).toContain(`Could not connect to Redis at ${url}`);
    expect(run.stderr()).toContain('ECONNREFUSED');
    expect(existsSync(out)).toBe(false);
    expect(existsSync(path.join(dir, '.troupe'))).toBe(false);
  });

  describe(`with a server and no worker${skipReason}`, { skip: redisServerPath === undefined }, () => {
    let server: TestRedis;
    let workers: TestWorker[] = [];
    beforeAll(async () => {
      server = await TestRedis.start();
    });
    afterAll(async () => {
      await killWorkers(workers);
      await server?.destroy();
    });

    it('a Redis URL naming a database the server does not have fails before anything runs', async () => {
      const out = path.join(dir, 'no-db');
      const run = startCli(
        ['fanout', 'plan.yaml', '--backend', 'redis', '--redis', `${server.url}/99`, '--out', out],
        { cwd: dir, env },
      );
      expect(await run.exited).toBe(1);
      expect(run.stderr()).toContain(`invalid_option: Redis at ${server.url}/99 has no database 99`);
      expect(existsSync(out)).toBe(false);
    });

    it('a supervisor whose jobs no worker takes says so, with the worker count, and runs once one starts', async () => {
      const queueName = uniqueName('unserved');
      const supervisor = new RedisSupervisor({
        redisUrl: server.url,
        queueName,
        cwd: dir,
        unservedAfterMs: 300,
        reconcileIntervalMs: 100,
      });
      try {
        expect(await supervisor.describe()).toEqual({
          backend: 'redis',
          url: server.url,
          queue: queueName,
          prefix: 'troupe',
          workers: 0,
        });
        const unserved = nextEvent(supervisor, 'jobs:unserved');
        const handles = [1, 2].map((i) => supervisor.spawn('worker', { task: `Item ${i}: report.` }));
        const said = await unserved;
        expect(said).toMatchObject({ workers: 0, queue: queueName, url: server.url });
        // The jobs are added one after the other: the report counts those that have waited its
        // threshold by then, the first or both.
        expect(said.waiting).toBeGreaterThanOrEqual(1);
        expect(said.waiting).toBeLessThanOrEqual(2);
        const worker = await startWorker(server.url, ['--queue', queueName]);
        workers.push(worker);
        const outcomes = await Promise.all(handles.map((handle) => handle.result));
        expect(outcomes.map((outcome) => outcome.status)).toEqual(['completed', 'completed']);
        expect(await supervisor.describe()).toMatchObject({ workers: 1 });
      } finally {
        await supervisor.close();
        await killWorkers(workers);
        workers = [];
      }
    });

    it('troupe fanout --backend redis names the queue and its workers, and says how to start one when none takes the jobs', async () => {
      const out = path.join(dir, 'waited');
      const run = startCli(
        ['fanout', 'plan.yaml', '--backend', 'redis', '--redis', server.url, '--out', out],
        {
          cwd: dir,
          env,
        },
      );
      const until = async (text: string): Promise<void> => {
        while (!run.stdout().includes(text)) {
          if (run.child.exitCode !== null) throw new Error(`exited early:\n${run.stdout()}\n${run.stderr()}`);
          await new Promise<void>((resolve) => run.child.stdout?.once('data', () => resolve()));
        }
      };
      await until('Start one: ');
      const stdout = run.stdout();
      expect(stdout).toContain(`on redis (queue troupe-agents at ${server.url}, 0 worker(s) connected)`);
      expect(stdout).toContain(`Start one: TROUPE_REDIS_URL=${server.url} npx troupe worker`);
      expect(stdout).toMatch(
        /no worker has taken this run's agents for \d+ s \(2 waiting on queue troupe-agents/,
      );
      workers.push(await startWorker(server.url, []));
      expect(await run.exited, run.stderr()).toBe(0);
      expect(readResults(path.join(out, 'results.jsonl')).map((line) => line.status)).toEqual([
        'completed',
        'completed',
      ]);
    });
  });
});
