import { describe, expect, it } from 'vitest';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { policySupervisor, tempDir } from './helpers.ts';

describe('spawning a definition object that is not a whole definition', () => {
  it('fails that agent with invalid_request instead of an unhandled rejection', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      // What a JavaScript caller (no type checks) builds by hand: no settings, tools, blocks...
      const partial = { name: 'hand-made', description: 'By hand.', body: 'Do it.' };
      const handle = supervisor.spawn(partial as unknown as AgentDefinition, { task: 'Go.' });
      // Without the fix the TypeError escaped as an unhandled rejection (a crash of the process)
      // and the handle's result never settled.
      const outcome = await Promise.race([
        handle.result,
        new Promise<'unsettled'>((resolve) => setTimeout(() => resolve('unsettled'), 30_000).unref()),
      ]);
      expect(outcome).toMatchObject({ status: 'failed', reason: 'invalid_request' });
      // The supervisor goes on serving other agents.
      expect(await supervisor.spawn('worker', { task: 'Review nothing.' }).result).toMatchObject({
        status: 'completed',
      });
    } finally {
      await supervisor.close();
    }
  });
});
