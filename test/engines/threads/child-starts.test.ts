/**
 * The thread engine's search for a resumed parent's children (`Engine.childStarts`): its bound
 * counts the journals that name that parent, not every journal of the run, so in a run with more
 * agents than the bound the child of a cut-off `spawn_agent` late in the run is still found.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EngineContext } from '../../../src/engines/engine.ts';
import type { ThreadEngineOptions } from '../../../src/engines/threads/thread-engine.ts';
import { ThreadEngine } from '../../../src/engines/threads/thread-engine.ts';
import type { AuditEventInput } from '../../../src/journal/events.ts';
import { MemoryJournal } from '../../../src/journal/sink.ts';
import { JournalWriter } from '../../../src/journal/writer.ts';
import { FakeAgent } from '../../journal/helpers.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-child-starts-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A journal holding only a Started event for `agentId`, spawned by `parentId` when given. */
function writeStarted(agentId: string, parentId?: string, spawnCallId?: string): void {
  const memory = new MemoryJournal();
  new FakeAgent(memory).start();
  const [started] = memory.events;
  if (started?.type !== 'Started') throw new Error('FakeAgent wrote no Started event');
  const { seq: _seq, ts: _ts, prev: _prev, hash: _hash, ...body } = started;
  const writer = JournalWriter.open(path.join(dir, `${agentId}.jsonl`));
  writer.append({
    ...body,
    agentId,
    task: `the task of ${agentId}`,
    ...(parentId === undefined ? {} : { parentId }),
    ...(spawnCallId === undefined ? {} : { spawnCallId }),
  } as AuditEventInput);
  writer.close();
}

function engineOver(journalDir: string): ThreadEngine {
  const host = { emit: () => {} } as unknown as EngineContext['host'];
  return new ThreadEngine({ journalDir, limits: {} } as unknown as ThreadEngineOptions, {
    host,
    hostTools: [],
  });
}

const bounds = { maxJournals: 3, maxBytes: 1024 * 1024, maxHeadBytes: 1024 * 1024 };

describe('ThreadEngine.childStarts', () => {
  it('finds a child past more top-level journals than its bound: only journals naming the parent count', async () => {
    // Plan entries (no parent) sort before the child, and outnumber the bound.
    for (let i = 0; i < 8; i += 1) writeStarted(`a-${i}`);
    writeStarted('z-child', 'a-5', 'call-1');
    writeStarted('z-other', 'a-6', 'call-2');
    const engine = engineOver(dir);

    const found = await engine.childStarts('a-5', bounds);

    // Without the fix the first 3 journals were all the search read: the child was not examined.
    expect(found).toEqual({
      starts: [
        { agentId: 'z-child', spawnCallId: 'call-1', agent: expect.any(String), task: 'the task of z-child' },
      ],
      notExamined: [],
    });
  });

  it('names the children of that parent past its bound, and finds journals written since the last search', async () => {
    for (let i = 0; i < 5; i += 1) writeStarted(`c-${i}`, 'p', `call-${i}`);
    const engine = engineOver(dir);

    const first = await engine.childStarts('p', bounds);
    expect(first.starts).toHaveLength(3);
    expect(first.notExamined).toHaveLength(2);

    writeStarted('late', 'q', 'call-late');
    const later = await engine.childStarts('q', bounds);
    expect(later.starts.map((start) => start.agentId)).toEqual(['late']);
  });
});
