import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hasErrorCode } from '../../src/errors.ts';
import { parseJournal, readJournal } from '../../src/journal/reader.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { writeSampleRun } from './helpers.ts';

function sampleLines(): string[] {
  const journal = new MemoryJournal();
  writeSampleRun(journal);
  return journal.toJsonl().split('\n').slice(0, -1);
}

describe('readJournal', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('reads a file and reports a missing one as journal_not_found', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-journal-'));
    dirs.push(dir);
    const file = path.join(dir, 'agent.jsonl');
    const lines = sampleLines();
    writeFileSync(file, `${lines.join('\n')}\n`);
    expect(readJournal(file).events).toHaveLength(lines.length);
    try {
      readJournal(path.join(dir, 'missing.jsonl'));
      expect.unreachable('a missing journal must throw');
    } catch (error) {
      expect(hasErrorCode(error, 'journal_not_found')).toBe(true);
    }
  });
});

describe('parseJournal', () => {
  it('ignores a torn last line without a newline and says how long it was', () => {
    const lines = sampleLines();
    const torn = lines[4]?.slice(0, 37) ?? '';
    const read = parseJournal(`${lines.slice(0, 4).join('\n')}\n${torn}`);
    expect(read.events.map((event) => event.seq)).toEqual([0, 1, 2, 3]);
    expect(read).toMatchObject({ tornTail: true, tornTailBytes: 37, problems: [] });
  });

  it('ignores a complete last event that lacks its newline: the append never finished', () => {
    const lines = sampleLines();
    const read = parseJournal(lines.slice(0, 3).join('\n'));
    expect(read.events).toHaveLength(2);
    expect(read.tornTail).toBe(true);
  });

  it('reports a damaged last line that ends with a newline as a problem, not a torn tail', () => {
    const lines = sampleLines();
    const read = parseJournal(`${lines.slice(0, 3).join('\n')}\n${lines[3]?.slice(0, 30)}\n`);
    expect(read).toMatchObject({ tornTail: false, tornTailBytes: 0 });
    expect(read.events).toHaveLength(3);
    expect(read.problems).toEqual([expect.objectContaining({ line: 4, reason: 'unparseable' })]);
  });

  it('reports a truncated line before the end as a problem and keeps the events around it', () => {
    const lines = sampleLines();
    const damaged = [...lines];
    damaged[2] = lines[2]?.slice(0, 50) ?? '';
    const text = `${damaged.join('\n')}\n`;
    const read = parseJournal(text);
    expect(read.tornTail).toBe(false);
    expect(read.events.map((event) => event.seq)).toEqual(
      lines.map((_, index) => index).filter((seq) => seq !== 2),
    );
    expect(read.problems).toEqual([
      expect.objectContaining({
        line: 3,
        reason: 'unparseable',
        offset: Buffer.byteLength(`${lines[0]}\n${lines[1]}\n`),
      }),
    ]);
  });

  it('reports a blank line and a JSON line that is not an event', () => {
    const lines = sampleLines();
    const text = `${lines[0]}\n\n{"type":"Started","seq":"one"}\n${lines[1]}\n`;
    const read = parseJournal(text);
    expect(read.events).toHaveLength(2);
    expect(read.problems.map((problem) => [problem.line, problem.reason])).toEqual([
      [2, 'blank_line'],
      [3, 'not_an_event'],
    ]);
  });

  it('reports an event with an unknown type or a missing member', () => {
    const lines = sampleLines();
    const event = JSON.parse(lines[1] ?? '{}') as Record<string, unknown>;
    const unknown = JSON.stringify({ ...event, type: 'Teleported' });
    const missing = JSON.stringify({ ...event, round: 'two' });
    const read = parseJournal(`${lines[0]}\n${unknown}\n${missing}\n${lines[2]}\n`);
    expect(read.problems.map((problem) => problem.message)).toEqual([
      expect.stringContaining('unknown event type "Teleported"'),
      expect.stringContaining('`round` is not a number'),
    ]);
  });

  it('an empty journal has no events and no torn tail', () => {
    expect(parseJournal('')).toEqual({
      events: [],
      tornTail: false,
      tornTailBytes: 0,
      problems: [],
    });
  });
});

describe('readJournal, a chunk at a time', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const fileWith = (text: string): string => {
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-journal-'));
    dirs.push(dir);
    const file = path.join(dir, 'agent.jsonl');
    writeFileSync(file, text);
    return file;
  };

  it('reads what parseJournal reads of the whole file, lines across read chunks and a torn tail included', () => {
    const lines = sampleLines();
    // Over 1 MiB (the read chunk): lines cross chunk boundaries; a 3 MiB line spans several.
    const many = Array.from({ length: 4000 }, (_, index) => lines[index % lines.length]);
    const text = `${many.join('\n')}\n${'x'.repeat(3 * 1024 * 1024)}\n${lines.join('\n')}\n${lines[0]?.slice(0, 50)}`;
    const file = fileWith(text);
    const read = readJournal(file, { hashes: true });
    expect(read).toEqual(parseJournal(readFileSync(file), { hashes: true }));
    expect(read.problems).toEqual([expect.objectContaining({ line: 4001, reason: 'unparseable' })]);
    expect(read.tornTailBytes).toBe(50);
  });

  it('fails a line over maxLineBytes with journal_line_too_long, naming the file, the line and the bound', () => {
    const lines = sampleLines();
    const lengths = lines.map((line) => Buffer.byteLength(line));
    const bound = Math.max(...lengths) - 1;
    const longest = lengths.findIndex((length) => length > bound);
    const offset = lengths.slice(0, longest).reduce((sum, length) => sum + length + 1, 0);
    const file = fileWith(`${lines.join('\n')}\n`);
    expect(readJournal(file, { maxLineBytes: bound + 1 }).events).toHaveLength(lines.length);
    const error = (() => {
      try {
        readJournal(file, { maxLineBytes: bound });
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(hasErrorCode(error, 'journal_line_too_long')).toBe(true);
    expect(error).toMatchObject({ fields: { path: file, line: longest + 1, offset, limit: bound } });
    expect((error as Error).message).toContain(`line ${longest + 1}`);
    expect((error as Error).message).toContain(`at most ${bound} bytes`);
  });

  it('fails a line over the bound that spans read chunks, and a torn tail over it, without holding them', () => {
    const lines = sampleLines();
    const big = 'y'.repeat(3 * 1024 * 1024);
    const bound = 2 * 1024 * 1024;
    for (const [text, line] of [
      [`${lines[0]}\n${big}\n${lines[1]}\n`, 2],
      [`${lines[0]}\n${big}`, 2],
    ] as const) {
      expect(() => readJournal(fileWith(text), { maxLineBytes: bound })).toThrow(
        expect.objectContaining({ code: 'journal_line_too_long', fields: expect.objectContaining({ line }) }),
      );
    }
  });

  it('reads no more than `lines` lines: a first event is read without the rest', () => {
    const lines = sampleLines();
    const file = fileWith(`${lines.join('\n')}\n${'z'.repeat(4096)}\n`);
    const read = readJournal(file, { lines: 1, maxLineBytes: 4000 });
    expect(read.events.map((event) => event.type)).toEqual(['Started']);
    expect(read).toMatchObject({ problems: [], tornTail: false });
  });
});
