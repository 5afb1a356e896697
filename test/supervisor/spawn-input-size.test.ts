import { existsSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_SPAWN_INPUT_BYTES } from '../../src/constants.ts';
import { policySupervisor, tempDir } from './helpers.ts';

describe('the size of a spawn input', () => {
  it('a task over MAX_SPAWN_INPUT_BYTES is refused at spawn, naming its size and the bound; nothing is journalled', async () => {
    const journalDir = tempDir();
    const supervisor = policySupervisor({ journalDir });
    try {
      // Multi-byte characters: the bound is on UTF-8 bytes, not string length.
      const big = 'é'.repeat(MAX_SPAWN_INPUT_BYTES / 2 + 1);
      const expected = {
        code: 'spawn_input_too_large',
        fields: { agent: 'worker', size: MAX_SPAWN_INPUT_BYTES + 2, limit: MAX_SPAWN_INPUT_BYTES },
      };
      // Without the bound, a 10 MB task was journalled in Started and only failed at its first
      // request (context_budget); on the redis engine it was copied into the job as well.
      expect(() => supervisor.spawn('worker', { task: big })).toThrow(expect.objectContaining(expected));
      expect(() => supervisor.spawn('worker', { task: big })).toThrow(
        `are ${MAX_SPAWN_INPUT_BYTES + 2} bytes; a spawn's input may be at most ${MAX_SPAWN_INPUT_BYTES} bytes`,
      );
      expect(supervisor.agentCount).toBe(0);
      expect(existsSync(journalDir) ? readdirSync(journalDir) : []).toEqual([]);
    } finally {
      await supervisor.close();
    }
  });

  it('metadata counts with the task, as the JSON journalled in Started and copied into a redis job', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const blob = 'x'.repeat(MAX_SPAWN_INPUT_BYTES);
      expect(() => supervisor.spawn('worker', { task: 'Report.', metadata: { blob } })).toThrow(
        expect.objectContaining({
          code: 'spawn_input_too_large',
          fields: expect.objectContaining({
            size: MAX_SPAWN_INPUT_BYTES + 7 + JSON.stringify({ blob: '' }).length,
          }),
        }),
      );
      expect(supervisor.agentCount).toBe(0);
    } finally {
      await supervisor.close();
    }
  });

  it('context sections count with the task, and fanOut gives a refused spec its own invalid_request result', async () => {
    const supervisor = policySupervisor({ journalDir: tempDir() });
    try {
      const section = 'x'.repeat(MAX_SPAWN_INPUT_BYTES / 2);
      expect(() => supervisor.spawn('worker', { task: 'Report.', context: [section, section] })).toThrow(
        expect.objectContaining({
          code: 'spawn_input_too_large',
          fields: expect.objectContaining({ size: MAX_SPAWN_INPUT_BYTES + 7 }),
        }),
      );
      const results = await supervisor
        .fanOut([
          { agent: 'worker', task: 'Report.' },
          { agent: 'worker', task: 'y'.repeat(MAX_SPAWN_INPUT_BYTES + 1) },
        ])
        .all();
      expect(results[0]?.outcome).toMatchObject({ status: 'completed' });
      expect(results[1]?.outcome).toMatchObject({
        status: 'failed',
        reason: 'invalid_request',
        error: { code: 'spawn_input_too_large' },
      });
    } finally {
      await supervisor.close();
    }
  });
});
