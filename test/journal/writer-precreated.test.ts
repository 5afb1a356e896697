import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJournal } from '../../src/journal/reader.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import { AGENT_ID, steppingClock, writeSampleRun } from './helpers.ts';

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-precreated-'));
  file = path.join(dir, 'agent.jsonl');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('JournalWriter.open with precreated', () => {
  it('writes a new journal into an empty file someone else created', () => {
    writeFileSync(file, '');
    const writer = JournalWriter.open(file, { precreated: true, now: steppingClock() });
    expect(writer.existingEvents).toBe(0);
    expect(writer.nextSeq).toBe(0);
    const written = writeSampleRun(writer).events;
    writer.close();
    expect(readJournal(file).events).toEqual(written);
  });

  it('creates the file (and its directory) when no one has yet', () => {
    const nested = path.join(dir, 'not-yet', 'agent.jsonl');
    const writer = JournalWriter.open(nested, { precreated: true, now: steppingClock() });
    const written = writeSampleRun(writer).events;
    writer.close();
    expect(readJournal(nested).events).toEqual(written);
  });

  it('continues a journal that already holds events, as without the option', () => {
    const first = JournalWriter.open(file, { now: steppingClock() });
    const before = writeSampleRun(first).events;
    first.close();
    const bytes = readFileSync(file, 'utf8');

    const writer = JournalWriter.open(file, { precreated: true, now: steppingClock() });
    expect(writer.existingEvents).toBe(before.length);
    expect(writer.nextSeq).toBe(before.length);
    writer.append({ type: 'Instructed', agentId: AGENT_ID, index: 0, text: 'go on', callId: 'call_1' });
    writer.close();

    const after = readFileSync(file, 'utf8');
    expect(after.startsWith(bytes)).toBe(true);
    const events = readJournal(file).events;
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    expect(events.at(-1)?.prev).toBe(before.at(-1)?.hash);
  });

  it('cuts a torn last line of an existing journal, as without the option', () => {
    const first = JournalWriter.open(file, { now: steppingClock() });
    writeSampleRun(first);
    first.close();
    writeFileSync(file, `${readFileSync(file, 'utf8')}{"seq":`);
    const writer = JournalWriter.open(file, { precreated: true });
    expect(writer.truncatedBytes).toBe('{"seq":'.length);
    writer.close();
    expect(readJournal(file).tornTail).toBe(false);
  });
});
