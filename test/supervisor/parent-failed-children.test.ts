import { describe, expect, it } from 'vitest';
import type { AgentOutcome } from '../../src/loop/types.ts';
import { policySupervisor, tempDir } from './helpers.ts';

describe('a parent that fails with subagents still running', () => {
  it('its subagents are cancelled, not left running unowned until close()', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const parent = supervisor.spawn('worker', {
        task: 'Wait for 1 instruction, then report.',
        limits: { wallClockMs: 500 },
      });
      // What spawn_agent does; the child waits for an instruction its parent will never send.
      const child = supervisor.spawn('worker', {
        task: 'Wait for 1 instruction, then report.',
        parent: parent.id,
      });
      expect(await parent.result).toMatchObject({ status: 'failed', reason: 'timeout' });
      const outcome = await Promise.race([
        child.result,
        new Promise<'unsettled'>((resolve) => setTimeout(() => resolve('unsettled'), 30_000).unref()),
      ]);
      // Without the fix the child waited for an instruction until the supervisor closed.
      expect(outcome).not.toBe('unsettled');
      expect(outcome as AgentOutcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
      expect((outcome as AgentOutcome & { status: 'failed' }).error.message).toContain(
        'parent failed (timeout)',
      );
    } finally {
      await supervisor.close();
    }
  });
});
