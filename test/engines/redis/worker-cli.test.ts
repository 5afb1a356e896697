import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.ts';
import type { CliIO } from '../../../src/cli/shared/io.ts';
import { redisServerPath, skipReason, startWorker, TestRedis } from './helpers.ts';

async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

describe('troupe worker', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('says where the Redis URL comes from when none is given', async () => {
    vi.stubEnv('TROUPE_REDIS_URL', '');
    const result = await run('worker');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('missing_redis_url');
    expect(result.stderr).toContain('TROUPE_REDIS_URL');
  });

  it('refuses a concurrency or thread count that is not a positive integer', async () => {
    for (const argv of [
      ['worker', '--redis', 'redis://127.0.0.1:1', '--concurrency', '0'],
      ['worker', '--redis', 'redis://127.0.0.1:1', '--threads', 'two'],
    ]) {
      const result = await run(...argv);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('invalid_option');
    }
  });

  it('fails with redis_unreachable when nothing listens at the URL', async () => {
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const address = probe.address();
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const port = typeof address === 'object' && address !== null ? address.port : 1;
    const { WorkerGroup } = await import('../../../src/engines/redis/worker-group.ts');
    await expect(
      WorkerGroup.start({ redisUrl: `redis://127.0.0.1:${port}`, connectTimeoutMs: 300 }),
    ).rejects.toMatchObject({ code: 'redis_unreachable' });
  });

  it.skipIf(redisServerPath === undefined)(
    `runs a worker in a thread with the young generation it is given, else on the calling thread${skipReason}`,
    async () => {
      const server = await TestRedis.start();
      const { WorkerGroup } = await import('../../../src/engines/redis/worker-group.ts');
      try {
        const sized = await WorkerGroup.start({ redisUrl: server.url, youngGenerationMb: 64 });
        expect(sized.youngGenerationsMb).toEqual([64]);
        await sized.close();
        const plain = await WorkerGroup.start({ redisUrl: server.url });
        expect(plain.youngGenerationsMb).toEqual([undefined]);
        await plain.close();
        await expect(WorkerGroup.start({ redisUrl: server.url, youngGenerationMb: 0 })).rejects.toMatchObject(
          {
            code: 'invalid_option',
          },
        );
      } finally {
        await server.destroy();
      }
    },
  );

  it.skipIf(redisServerPath === undefined)(
    `runs one worker per thread with --threads and stops on SIGTERM${skipReason}`,
    async () => {
      const server = await TestRedis.start();
      try {
        const worker = await startWorker(server.url, ['--threads', '2', '--concurrency', '1']);
        expect(worker.ids).toHaveLength(2);
        worker.kill('SIGTERM');
        await worker.exited;
        expect(worker.output(), worker.output()).toContain('troupe worker: stopped');
      } finally {
        await server.destroy();
      }
    },
  );
});
