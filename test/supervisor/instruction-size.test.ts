import { describe, expect, it } from 'vitest';
import { MAX_INSTRUCTION_BYTES } from '../../src/constants.ts';
import { policySupervisor, tempDir } from './helpers.ts';

describe('the size of one instruction', () => {
  it('an instruction over MAX_INSTRUCTION_BYTES is refused, naming its size and the bound; the agent goes on', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const handle = supervisor.spawn('worker', { task: 'Wait for 1 instruction, then report.' });
      // Multi-byte characters: the bound is on UTF-8 bytes, not string length.
      const big = 'é'.repeat(MAX_INSTRUCTION_BYTES / 2 + 1);
      const expected = {
        code: 'instruction_too_large',
        fields: { agentId: handle.id, size: MAX_INSTRUCTION_BYTES + 2, limit: MAX_INSTRUCTION_BYTES },
      };
      // Without the bound, 10 MB was accepted and journalled twice.
      await expect(supervisor.instruct(handle.id, big)).rejects.toMatchObject(expected);
      expect(() => handle.send(big)).toThrow(expect.objectContaining(expected));
      await expect(supervisor.instruct(handle.id, big)).rejects.toThrow(
        `is ${MAX_INSTRUCTION_BYTES + 2} bytes; an instruction may be at most ${MAX_INSTRUCTION_BYTES} bytes`,
      );
      await supervisor.instruct(handle.id, 'A'.repeat(MAX_INSTRUCTION_BYTES));
      expect(await handle.result).toMatchObject({ status: 'completed' });
    } finally {
      await supervisor.close();
    }
  });
});
