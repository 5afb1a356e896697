/**
 * `troupe fanout --backend redis --redis-down-timeout-ms N`: the run's Supervisor gives a lost
 * Redis N ms to come back (not the 60 s default), then its agents fail with `redis_unreachable`
 * and the command exits 1. Against a loopback model that calls a tool for ever.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../src/cli/main.ts';
import { startToolLoopServer, type ToolLoopServer } from '../../fixtures/loopback/tool-loop-server.ts';
import { tempDir } from '../../fixtures/temp-dirs.ts';
import { captureIO, waitUntil } from '../../run-dir/helpers.ts';
import {
  killWorkers,
  redisServerPath,
  skipReason,
  startWorker,
  TestRedis,
  type TestWorker,
} from './helpers.ts';

describe(`troupe fanout --redis-down-timeout-ms${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let model: ToolLoopServer;
  let workers: TestWorker[] = [];

  beforeAll(async () => {
    server = await TestRedis.start();
    model = await startToolLoopServer();
    workers = [await startWorker(server.url, [], { OPENAI_API_KEY: 'k' })];
  });

  afterAll(async () => {
    await killWorkers(workers);
    await model?.close();
    await server?.destroy();
  });

  it('fails the run with redis_unreachable once Redis stays away past the flag, and exits 1', async () => {
    const cwd = tempDir('troupe-cli-redis-down-');
    writeFileSync(path.join(cwd, 'a.txt'), 'alpha\n');
    const plan = path.join(cwd, 'plan.yaml');
    writeFileSync(
      plan,
      [
        'cwd: .',
        'agent: worker',
        'provider: openai',
        `providerOptions: { baseURL: "${model.baseURL}", maxRetries: 0 }`,
        'model: gpt-4.1-mini',
        'limits: { maxSteps: 100000 }',
        'runLimits: { maxTotalTokens: 0 }',
        'runs:',
        '  - task: Review a.txt',
      ].join('\n'),
    );
    const saved = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = 'k';
    try {
      const io = captureIO();
      const run = main(
        [
          'fanout',
          plan,
          '--json',
          '--backend',
          'redis',
          '--redis',
          server.url,
          '--redis-down-timeout-ms',
          '400',
          '--out',
          path.join(cwd, 'run'),
        ],
        io,
      );
      let settled = false;
      void run.finally(() => {
        settled = true;
      });
      await waitUntil(() => model.requests() > 0 || settled, 'the agent asks the model');
      await server.stop();
      expect(await run).toBe(1);
      expect(io.out()).toContain('redis_unreachable');
      expect(io.out()).toContain('did not come back within 400 ms');
    } finally {
      if (saved === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = saved;
    }
  });
});
