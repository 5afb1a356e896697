/**
 * A thread that never gets ready (stuck loading its modules) is bounded by `threadStartTimeoutMs`:
 * the Supervisor's start fails with a typed error naming the timeout instead of waiting for ever,
 * and close() still ends at once.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isTroupeError } from '../../../src/errors.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { policySupervisor, tempDir } from '../../supervisor/helpers.ts';

const neverReady = path.join(import.meta.dirname, '../../fixtures/threads/never-ready.cjs');

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

describe('threadStartTimeoutMs', () => {
  it('fails the start with thread_start_failed, cause thread_start_timeout, when a thread never gets ready', async () => {
    supervisor = policySupervisor({
      threads: 1,
      cwd: tempDir(),
      execArgv: ['--require', neverReady],
      threadStartTimeoutMs: 300,
    });
    const error = await supervisor.start().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isTroupeError(error)).toBe(true);
    expect(error).toMatchObject({
      code: 'thread_start_failed',
      fields: { cause: 'thread_start_timeout' },
    });
    expect((error as Error).message).toContain('was not ready after 300 ms');
  });

  it('an agent spawned meanwhile fails instead of waiting for a thread', async () => {
    supervisor = policySupervisor({
      threads: 1,
      cwd: tempDir(),
      execArgv: ['--require', neverReady],
      threadStartTimeoutMs: 300,
    });
    const outcome = await supervisor.spawn('worker', { task: 'Say hello.', provider: 'simulated' }).result;
    expect(outcome.status).toBe('failed');
  });

  it('refuses a timeout that is not a positive integer', () => {
    expect(() => policySupervisor({ cwd: tempDir(), threadStartTimeoutMs: 0 })).toThrow(
      /threadStartTimeoutMs/,
    );
  });
});
