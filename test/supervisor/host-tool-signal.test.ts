import { describe, expect, it } from 'vitest';
import { policySupervisor, tempDir } from './helpers.ts';

describe('a host tool call of an agent that ends while it runs', () => {
  it('sees its signal abort when the agent is cancelled', async () => {
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    let aborted: (reason: unknown) => void = () => {};
    const abortSeen = new Promise<unknown>((resolve) => {
      aborted = resolve;
    });
    const supervisor = policySupervisor({
      cwd: tempDir(),
      journalDir: tempDir(),
      defaultProvider: 'policy',
      hostTools: {
        gate: {
          description: 'Waits until it is told to stop.',
          parameters: { type: 'object', properties: {} },
          execute: (_args, { signal }) =>
            new Promise((resolve) => {
              signal.addEventListener('abort', () => {
                aborted(signal.reason);
                resolve('stopped');
              });
              started();
            }),
        },
      },
    });
    try {
      const handle = supervisor.spawn('worker', { task: 'call gate' });
      await running;
      handle.cancel('enough');
      expect(await handle.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
      // Without the fix the signal never aborted: the tool ran on after its agent had ended.
      const reason = await Promise.race([
        abortSeen,
        new Promise<'never'>((resolve) => setTimeout(() => resolve('never'), 30_000).unref()),
      ]);
      expect(reason).not.toBe('never');
    } finally {
      await supervisor.close();
    }
  });
});
