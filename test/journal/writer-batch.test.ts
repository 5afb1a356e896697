import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JOURNAL_BATCH_MAX_CHARS } from '../../src/journal/constants.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import { AGENT_ID, FakeAgent, steppingClock, writeSampleRun } from './helpers.ts';

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-journal-batch-'));
  file = path.join(dir, 'agent.jsonl');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const onDisk = (at = file): number => readJournal(at).events.length;
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('a batching journal writer', () => {
  it('holds appended events until commit, then writes them all, in order', () => {
    const writer = JournalWriter.open(file, { batch: true });
    new FakeAgent(writer).start().submit(1);
    expect(statSync(file).size).toBe(0);
    expect(writer.nextSeq).toBe(2);
    writer.commit();
    expect(readJournal(file).events.map((event) => event.type)).toEqual(['Started', 'InferenceSubmitted']);
    writer.commit();
    expect(onDisk()).toBe(2);
    writer.close();
  });

  it('writes exactly the bytes a non-batching writer and a MemoryJournal write for the same events', () => {
    const batched = JournalWriter.open(file, { batch: true, now: steppingClock() });
    writeSampleRun(batched);
    batched.close();
    const memory = new MemoryJournal({ now: steppingClock() });
    writeSampleRun(memory);
    expect(readFileSync(file, 'utf8')).toBe(memory.toJsonl());
    expect(verifyJournalFile(file).ok).toBe(true);
  });

  it('writes what it holds at the end of the event-loop turn when no one commits', async () => {
    const writer = JournalWriter.open(file, { batch: true });
    new FakeAgent(writer).start();
    expect(onDisk()).toBe(0);
    await nextTurn();
    expect(onDisk()).toBe(1);
    writer.close();
  });

  it('commitAll writes the held events of every batching writer on the thread', () => {
    const other = path.join(dir, 'other.jsonl');
    const first = JournalWriter.open(file, { batch: true });
    const second = JournalWriter.open(other, { batch: true });
    new FakeAgent(first).start();
    second.append({ ...startedBody(), agentId: 'agent-2' });
    JournalWriter.commitAll();
    expect([onDisk(), onDisk(other)]).toEqual([1, 1]);
    first.close();
    second.close();
  });

  it('writes held events on close and on flush', () => {
    const writer = JournalWriter.open(file, { batch: true });
    new FakeAgent(writer).start();
    writer.flush();
    expect(onDisk()).toBe(1);
    writer.append({ type: 'Waiting', agentId: AGENT_ID, callId: 'c1', index: 0 });
    writer.close();
    expect(onDisk()).toBe(2);
  });

  it(`writes at once when more than JOURNAL_BATCH_MAX_CHARS (${JOURNAL_BATCH_MAX_CHARS}) are held`, () => {
    const writer = JournalWriter.open(file, { batch: true });
    new FakeAgent(writer).start();
    const text = 'x'.repeat(1000);
    let appended = 1;
    while (onDisk() === 0) {
      writer.append({ type: 'HistoryAppended', agentId: AGENT_ID, round: 1, text, displayedKeys: [] });
      appended += 1;
      expect(appended * text.length).toBeLessThan(JOURNAL_BATCH_MAX_CHARS + 2 * text.length);
    }
    expect(onDisk()).toBe(appended);
    writer.close();
  });

  it('a crash before the commit leaves the journal as it stood: it verifies, and resumes after it', () => {
    const writer = JournalWriter.open(file, { batch: true });
    new FakeAgent(writer).start().submit(1);
    writer.commit();
    writer.append({ type: 'Waiting', agentId: AGENT_ID, callId: 'c1', index: 0 });
    // What a killed process leaves: the file as written so far (the held event dies with it).
    const afterCrash = readFileSync(file);
    writer.close();
    const copy = path.join(dir, 'crashed.jsonl');
    writeFileSync(copy, afterCrash);
    expect(readJournal(copy).events.map((event) => event.type)).toEqual(['Started', 'InferenceSubmitted']);
    expect(verifyJournalFile(copy).ok).toBe(true);
    const resumed = JournalWriter.open(copy, { batch: true });
    expect(resumed.nextSeq).toBe(2);
    resumed.close();
  });

  it('rejects a batch option that is not a boolean', () => {
    expect(() => JournalWriter.open(file, { batch: 'yes' as unknown as boolean })).toThrow(
      expect.objectContaining({ code: 'invalid_option' }),
    );
  });
});

function startedBody(): Parameters<JournalWriter['append']>[0] {
  const memory = new MemoryJournal();
  new FakeAgent(memory).start();
  const [started] = memory.events;
  if (!started) throw new Error('FakeAgent wrote no Started event');
  const { seq: _seq, ts: _ts, prev: _prev, hash: _hash, ...body } = started;
  return body;
}
