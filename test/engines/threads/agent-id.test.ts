import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { policySupervisor, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

describe('agent ids on worker threads', () => {
  it('an id that would put its journal outside the journal folder is refused before anything runs', async () => {
    const root = tempDir();
    const journalDir = path.join(root, 'journals');
    supervisor = policySupervisor({ cwd: root, journalDir });
    for (const id of ['../escape', 'a/b', 'a\\b', 'new\nline', '']) {
      expect(() => supervisor?.spawn('worker', { id, task: 'Report.' })).toThrow(
        expect.objectContaining({ code: 'invalid_agent_id', fields: { agentId: id } }),
      );
    }
    expect(existsSync(path.join(root, 'escape.jsonl'))).toBe(false);
  });

  it('any other id names its journal file as written', async () => {
    const root = tempDir();
    const journalDir = path.join(root, 'journals');
    supervisor = policySupervisor({ cwd: root, journalDir });
    const handle = supervisor.spawn('worker', { id: 'review: a.ts @1', task: 'Report.' });
    expect((await handle.result).status).toBe('completed');
    expect(readdirSync(journalDir)).toContain('review: a.ts @1.jsonl');
  });
});
