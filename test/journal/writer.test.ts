import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { hasErrorCode } from '../../src/errors.ts';
import { GENESIS_HASH } from '../../src/journal/constants.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { verifyJournal } from '../../src/journal/verify.ts';
import { type FsyncPolicy, JournalWriter } from '../../src/journal/writer.ts';
import { AGENT_ID, FakeAgent, rerender, steppingClock, writeSampleRun } from './helpers.ts';

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-journal-'));
  file = path.join(dir, 'agent.jsonl');
});

afterEach(() => {
  vi.useRealTimers();
  rmSync(dir, { recursive: true, force: true });
});

function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return expect.unreachable('expected a throw');
}

describe('JournalWriter', () => {
  it('writes one canonical line per event that reads back as the events append returned', () => {
    const writer = JournalWriter.open(file, { now: steppingClock() });
    const written = writeSampleRun(writer).events;
    writer.close();

    const read = readJournal(file);
    expect(read).toMatchObject({ tornTail: false, tornTailBytes: 0, problems: [] });
    expect(read.events).toEqual(written);
    expect(read.events.map((event) => event.seq)).toEqual(written.map((_, index) => index));
    expect(read.events[0]?.prev).toBe(GENESIS_HASH);
    expect(read.events[0]?.ts).toBe('2025-01-01T00:00:00.000Z');
    for (const [index, event] of read.events.entries()) {
      if (index > 0) expect(event.prev).toBe(read.events[index - 1]?.hash);
    }
    expect(readFileSync(file, 'utf8').split('\n')).toHaveLength(written.length + 1);
  });

  it('writes exactly the bytes a MemoryJournal holds for the same events', () => {
    const writer = JournalWriter.open(file, { now: steppingClock() });
    writeSampleRun(writer);
    writer.close();
    const memory = new MemoryJournal({ now: steppingClock() });
    writeSampleRun(memory);
    expect(readFileSync(file, 'utf8')).toBe(memory.toJsonl());
  });

  it('keeps a ts the caller supplies (forwarded events)', () => {
    const writer = JournalWriter.open(file);
    const event = new FakeAgent(writer).start({ ts: '2024-06-01T12:00:00.000Z' }).events[0];
    writer.close();
    expect(event?.ts).toBe('2024-06-01T12:00:00.000Z');
  });

  it.each<FsyncPolicy>(['always', 'interval', 'never'])(
    'fsync %s: every appended event is readable after close',
    (fsync) => {
      const writer = JournalWriter.open(file, { fsync, intervalMs: 5 });
      const written = writeSampleRun(writer).events;
      writer.flush();
      writer.close();
      expect(readJournal(file).events).toEqual(written);
    },
  );

  it('the interval policy runs one timer while open and clears it on close', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const writer = JournalWriter.open(file, { fsync: 'interval', intervalMs: 100 });
    expect(vi.getTimerCount()).toBe(1);
    new FakeAgent(writer).start();
    vi.advanceTimersByTime(250);
    writer.close();
    expect(vi.getTimerCount()).toBe(0);
    expect(readJournal(file).events).toHaveLength(1);
  });

  it('the always and never policies start no timer', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    JournalWriter.open(file, { fsync: 'always' }).close();
    JournalWriter.open(file, { fsync: 'never' }).close();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('continues the hash chain of an existing journal across a reopen', () => {
    const first = JournalWriter.open(file);
    const agent = new FakeAgent(first).start().submit(1).call(1, 'c1', 'read_file', { path: 'a' });
    first.close();

    const second = JournalWriter.open(file);
    expect(second).toMatchObject({ existingEvents: 4, truncatedBytes: 0, nextSeq: 4 });
    expect(second.lastHash).toBe(agent.events[3]?.hash);
    const resumed = new FakeAgent(second).adopt(readJournal(file).events);
    resumed.result(1, 'c1', 'read_file', 'contents').submit(2);
    second.close();

    const events = readJournal(file).events;
    expect(events.map((event) => event.seq)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(events[4]?.prev).toBe(events[3]?.hash);
    expect(verifyJournal(events, { rerender })).toMatchObject({ ok: true, checkedInferences: 2 });
  });

  it('cuts a torn last line away on reopen, says how many bytes, and continues the chain', () => {
    const writer = JournalWriter.open(file);
    new FakeAgent(writer).start().submit(1);
    writer.close();
    const intact = readFileSync(file);
    appendFileSync(file, '{"type":"ToolCall","agentId":"agent-1","ro');

    const reopened = JournalWriter.open(file);
    expect(reopened.truncatedBytes).toBe(Buffer.byteLength('{"type":"ToolCall","agentId":"agent-1","ro'));
    expect(reopened.existingEvents).toBe(2);
    expect(readFileSync(file)).toEqual(intact);
    new FakeAgent(reopened).adopt(readJournal(file).events).call(1, 'c1', 'read_file', { path: 'a' });
    reopened.close();

    const read = readJournal(file);
    expect(read).toMatchObject({ tornTail: false, problems: [] });
    expect(read.events.map((event) => event.type)).toEqual([
      'Started',
      'InferenceSubmitted',
      'ToolCall',
      'HistoryAppended',
    ]);
    expect(verifyJournal(read.events, { rerender }).ok).toBe(true);
  });

  it('refuses to append when the last complete line is damaged: only bytes after the last newline are torn', () => {
    const writer = JournalWriter.open(file);
    new FakeAgent(writer).start();
    writer.close();
    appendFileSync(file, '\u0000\u0000\u0000\n');
    const error = thrownBy(() => JournalWriter.open(file));
    expect(error).toMatchObject({
      code: 'journal_corrupt',
      fields: { problems: [expect.objectContaining({ line: 2 })] },
    });
  });

  it('refuses to append to a journal damaged in the middle', () => {
    const writer = JournalWriter.open(file);
    new FakeAgent(writer).start().submit(1).history(1, 'x');
    writer.close();
    const lines = readFileSync(file, 'utf8').split('\n');
    lines[1] = lines[1]?.slice(0, 20) ?? '';
    writeFileSync(file, lines.join('\n'));

    const error = thrownBy(() => JournalWriter.open(file));
    expect(hasErrorCode(error, 'journal_corrupt')).toBe(true);
    expect(error).toMatchObject({ fields: { path: file, problems: [expect.objectContaining({ line: 2 })] } });
  });

  it('creates missing directories and a new journal starts at seq 0 from the genesis hash', () => {
    const nested = path.join(dir, 'a', 'b', 'agent.jsonl');
    const writer = JournalWriter.open(nested);
    expect(writer).toMatchObject({ existingEvents: 0, nextSeq: 0, lastHash: GENESIS_HASH });
    new FakeAgent(writer).start();
    writer.close();
    expect(readJournal(nested).events).toHaveLength(1);
  });

  it('rejects an event of another agent', () => {
    const writer = JournalWriter.open(file);
    new FakeAgent(writer).start();
    const error = thrownBy(() =>
      writer.append({ type: 'Waiting', agentId: 'agent-2', callId: 'w', index: 0 }),
    );
    writer.close();
    expect(error).toMatchObject({
      code: 'journal_agent_mismatch',
      fields: { expected: AGENT_ID, actual: 'agent-2' },
    });
  });

  it('rejects appends after close, and closing twice is harmless', () => {
    const writer = JournalWriter.open(file);
    writer.close();
    writer.close();
    expect(writer.closed).toBe(true);
    const error = thrownBy(() =>
      writer.append({ type: 'Waiting', agentId: AGENT_ID, callId: 'w', index: 0 }),
    );
    expect(hasErrorCode(error, 'journal_closed')).toBe(true);
  });

  it.each([
    [{ fsync: 'sometimes' as FsyncPolicy }, '/fsync'],
    [{ fsync: 'interval' as const, intervalMs: 0 }, '/intervalMs'],
    [{ intervalMs: Number.NaN }, '/intervalMs'],
  ])('rejects invalid options %j', (options, pointer) => {
    const error = thrownBy(() => JournalWriter.open(file, options));
    expect(error).toMatchObject({ name: 'UserError', code: 'invalid_option', fields: { path: pointer } });
  });
});
