import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { JournalPrecreator } from '../../../src/engines/threads/journal-precreator.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { policySupervisor, tempDir } from '../../supervisor/helpers.ts';

let dir: string;
let supervisor: Supervisor | undefined;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-precreate-'));
});

afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
  vi.restoreAllMocks();
  rmSync(dir, { recursive: true, force: true });
});

/** Turns until nothing is pending (each turn creates at least one file). */
async function drained(precreator: JournalPrecreator): Promise<void> {
  for (let turn = 0; turn < 1000 && precreator.pending > 0; turn += 1) await nextTurn();
  await nextTurn();
}

describe('JournalPrecreator', () => {
  it('creates each queued agent journal empty, on a later turn', async () => {
    const precreator = new JournalPrecreator(dir);
    precreator.add([
      ['a0', 'a1', 'a2'],
      ['b0', 'b1'],
    ]);
    expect(precreator.pending).toBe(5);
    expect(existsSync(path.join(dir, 'a0.jsonl'))).toBe(false);
    await drained(precreator);
    for (const id of ['a0', 'a1', 'a2', 'b0', 'b1']) {
      expect(readFileSync(path.join(dir, `${id}.jsonl`), 'utf8')).toBe('');
    }
    expect(precreator.pending).toBe(0);
  });

  it('never touches a journal that exists already', async () => {
    writeFileSync(path.join(dir, 'a0.jsonl'), '{"seq":0}\n');
    const precreator = new JournalPrecreator(dir);
    precreator.add([['a0']]);
    await drained(precreator);
    expect(readFileSync(path.join(dir, 'a0.jsonl'), 'utf8')).toBe('{"seq":0}\n');
  });

  it('creates the journal directory when it is missing', async () => {
    const nested = path.join(dir, 'run', 'journals');
    const precreator = new JournalPrecreator(nested);
    precreator.add([['a0']]);
    await drained(precreator);
    expect(existsSync(path.join(nested, 'a0.jsonl'))).toBe(true);
  });

  it('creates nothing once closed', async () => {
    const precreator = new JournalPrecreator(dir);
    precreator.add([['a0', 'a1']]);
    precreator.close();
    precreator.add([['a2']]);
    await nextTurn();
    await nextTurn();
    expect(['a0', 'a1', 'a2'].some((id) => existsSync(path.join(dir, `${id}.jsonl`)))).toBe(false);
    expect(precreator.pending).toBe(0);
  });

  it('gives up quietly when the directory cannot hold files (the hosts report it)', async () => {
    const notADir = path.join(dir, 'file');
    writeFileSync(notADir, 'x');
    const precreator = new JournalPrecreator(notADir);
    precreator.add([['a0', 'a1']]);
    await drained(precreator);
    expect(precreator.pending).toBe(0);
  });

  it("a supervisor's threads get new agents' journals created on the main thread, host by host", async () => {
    const add = vi.spyOn(JournalPrecreator.prototype, 'add');
    supervisor = policySupervisor({ cwd: tempDir() });
    const handles = Array.from({ length: 6 }, (_, i) =>
      supervisor?.spawn('worker', { task: `Report ${i}.` }),
    );
    const outcomes = await Promise.all(handles.map((handle) => handle?.result));
    expect(outcomes.map((outcome) => outcome?.status)).toEqual(Array(6).fill('completed'));
    const queued = add.mock.calls.flatMap(([byHost]) => byHost.flat());
    expect(queued.sort()).toEqual(handles.map((handle) => handle?.id).sort());
    // One list per thread the pass placed agents on.
    expect(add.mock.calls.find(([byHost]) => byHost.length > 0)?.[0]).toHaveLength(2);
  });
});
