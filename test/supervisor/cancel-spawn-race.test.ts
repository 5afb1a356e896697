import { describe, expect, it } from 'vitest';
import type { AgentOutcome } from '../../src/loop/types.ts';
import { policySupervisor, tempDir } from './helpers.ts';

describe('cancelling an agent while a subagent is spawned under it', () => {
  it('a subagent spawned after the cancel, before the parent ended, is cancelled too', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const parent = supervisor.spawn('worker', { task: 'Wait for 1 instruction, then report.' });
      await new Promise<void>((resolve) => parent.once('waiting', () => resolve()));
      parent.cancel('stop the tree');
      // What spawn_agent does when the parent's call crossed the cancel on its way to the
      // supervisor: the parent is cancelled but has not ended yet.
      const child = supervisor.spawn('worker', {
        task: 'Wait for 1 instruction, then report.',
        parent: parent.id,
      });
      expect(await parent.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
      // Without the fix, the child was never cancelled: it waited for an instruction forever.
      const outcome = await Promise.race([
        child.result,
        new Promise<'unsettled'>((resolve) => setTimeout(() => resolve('unsettled'), 30_000).unref()),
      ]);
      expect(outcome).not.toBe('unsettled');
      expect(outcome as AgentOutcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
      expect((outcome as AgentOutcome & { status: 'failed' }).error.message).toContain(
        'parent cancelled: stop the tree',
      );
    } finally {
      await supervisor.close();
    }
  });
});
