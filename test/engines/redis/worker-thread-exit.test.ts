/**
 * A worker thread that dies (no Redis needed: the thread is a fixture that reports ready and then
 * throws). On the main thread the error would have ended the process; `troupe worker` ends too, so
 * whatever supervises it restarts it, rather than staying up with no worker.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../../src/cli/main.ts';
import type { CliIO } from '../../../src/cli/shared/io.ts';
import { useWorkerThreadEntry, WorkerGroup } from '../../../src/engines/redis/worker-group.ts';

describe('a worker thread that dies', () => {
  let restore: () => void = () => {};
  beforeEach(() => {
    restore = useWorkerThreadEntry(
      new URL('../../fixtures/scaleout/crashing-worker-thread.mjs', import.meta.url),
    );
  });
  afterEach(() => restore());

  it('is reported by the group as an unexpected exit', async () => {
    const group = await WorkerGroup.start({ redisUrl: 'redis://127.0.0.1:1', youngGenerationMb: 64 });
    group.on('error', () => {});
    const exited = await new Promise<{ workerId: number; code: number }>((resolve) =>
      group.once('exit', resolve),
    );
    expect(exited).toEqual({ workerId: 7, code: 1 });
    await group.close(true);
  });

  it('ends `troupe worker` with exit code 1, its signal handlers removed', async () => {
    const handlers = process.listenerCount('SIGTERM');
    let stderr = '';
    const io: CliIO = {
      stdout: () => {},
      stderr: (text) => {
        stderr += text;
      },
    };
    const code = await main(['worker', '--redis', 'redis://127.0.0.1:1'], io);
    expect(code).toBe(1);
    expect(stderr).toContain('worker 7 ended unexpectedly');
    expect(process.listenerCount('SIGTERM')).toBe(handlers);
  });
});
