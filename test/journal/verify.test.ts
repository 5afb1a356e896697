import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/journal/canonical-json.ts';
import { eventHash } from '../../src/journal/chain.ts';
import type { AuditEvent, AuditEventInput } from '../../src/journal/events.ts';
import { parseJournal } from '../../src/journal/reader.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import {
  damageText,
  journalDamage,
  verifyJournal,
  verifyJournalContents,
  verifyJournalFile,
} from '../../src/journal/verify.ts';
import { AGENT_ID, rerender, steppingClock, writeSampleRun } from './helpers.ts';

function sampleJournal(): { events: readonly AuditEvent[]; bytes: Buffer; lineStarts: number[] } {
  const journal = new MemoryJournal({ now: steppingClock() });
  writeSampleRun(journal);
  const bytes = Buffer.from(journal.toJsonl(), 'utf8');
  const lineStarts = [0];
  for (let index = 0; index < bytes.length - 1; index++)
    if (bytes[index] === 0x0a) lineStarts.push(index + 1);
  return { events: journal.events, bytes, lineStarts };
}

/** Re-chains bodies as a forger could: every hash consistent, content changed. */
function rechain(events: readonly AuditEvent[], change: (event: AuditEvent) => AuditEvent): AuditEvent[] {
  const journal = new MemoryJournal();
  for (const event of events) {
    const { seq: _seq, prev: _prev, hash: _hash, ...body } = change(event);
    journal.append(body as AuditEventInput);
  }
  return [...journal.events];
}

describe('verifyJournal', () => {
  it('accepts an intact journal and checks every round against the re-render', () => {
    const { events } = sampleJournal();
    expect(verifyJournal(events, { rerender })).toEqual({
      ok: true,
      checkedEvents: events.length,
      checkedInferences: 3,
    });
    expect(verifyJournal(events)).toEqual({ ok: true, checkedEvents: events.length, checkedInferences: 0 });
  });

  it('a flipped byte anywhere in a middle line is reported at that line’s seq', () => {
    const { bytes, lineStarts } = sampleJournal();
    for (const line of [1, 5, 9]) {
      const start = lineStarts[line] ?? 0;
      const end = (lineStarts[line + 1] ?? bytes.length) - 1;
      for (let offset = start; offset <= end; offset++) {
        const damaged = Buffer.from(bytes);
        damaged[offset] = (damaged[offset] ?? 0) ^ 0x01;
        const result = verifyJournal(parseJournal(damaged).events, { rerender });
        expect(result.ok, `byte ${offset - start} of line ${line}`).toBe(false);
        expect(result.firstBad?.seq, `byte ${offset - start} of line ${line}`).toBe(line);
      }
    }
  });

  it('any single bit flip but the final newline is reported at the seq of the line it hit', () => {
    const { bytes, lineStarts } = sampleJournal();
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: bytes.length - 2 }),
        fc.integer({ min: 0, max: 7 }),
        (offset, bit) => {
          const damaged = Buffer.from(bytes);
          damaged[offset] = (damaged[offset] ?? 0) ^ (1 << bit);
          const line = lineStarts.findLastIndex((start) => start <= offset);
          const result = verifyJournalContents(parseJournal(damaged), { rerender });
          expect(result.firstBad?.seq).toBe(line);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('a flipped final newline looks like a torn append: the last event is dropped, the rest verifies', () => {
    const { bytes, events } = sampleJournal();
    const damaged = Buffer.from(bytes);
    damaged[bytes.length - 1] = 0x0b;
    const result = verifyJournalContents(parseJournal(damaged), { rerender });
    expect(result).toMatchObject({ ok: true, tornTail: true, checkedEvents: events.length - 1 });
  });

  it('verifyJournalFile reports damage to the last event, which no later event could reveal', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-journal-'));
    try {
      const file = path.join(dir, 'agent.jsonl');
      const { bytes, lineStarts, events } = sampleJournal();
      const damaged = Buffer.from(bytes);
      const lastStart = lineStarts.at(-1) ?? 0;
      damaged[lastStart + 2] = 0x00;
      writeFileSync(file, damaged);
      expect(verifyJournal(parseJournal(damaged).events).ok).toBe(true);
      expect(verifyJournalFile(file, { rerender })).toMatchObject({
        ok: false,
        tornTail: false,
        firstBad: { seq: events.length - 1, reason: 'damaged_line' },
      });
      writeFileSync(file, bytes);
      expect(verifyJournalFile(file, { rerender })).toMatchObject({
        ok: true,
        tornTail: false,
        checkedInferences: 3,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects a journal converted to CRLF line endings, naming the first line and the reason', () => {
    const { bytes } = sampleJournal();
    const crlf = Buffer.from(bytes.toString('utf8').replaceAll('\n', '\r\n'), 'utf8');
    const result = verifyJournalContents(parseJournal(crlf), { rerender });
    expect(result).toMatchObject({
      ok: false,
      checkedEvents: 0,
      firstBad: { seq: 0, reason: 'damaged_line' },
    });
    expect(result.firstBad?.message).toMatch(/^Line 1: .*carriage return/);
  });

  it('rejects a journal with a byte order mark, and one whose JSON was re-formatted', () => {
    const { bytes, events } = sampleJournal();
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    const withBom = verifyJournalContents(parseJournal(bom), { rerender });
    expect(withBom).toMatchObject({ ok: false, firstBad: { seq: 0, reason: 'damaged_line' } });
    expect(withBom.firstBad?.message).toMatch(/^Line 1: .*byte order mark/);

    const lines = bytes.toString('utf8').split('\n');
    lines[3] = JSON.stringify(JSON.parse(lines[3] ?? ''), null, 1).replaceAll('\n', '');
    const spaced = verifyJournalContents(parseJournal(lines.join('\n')), { rerender });
    // Same value, so the same hash: only the bytes tell.
    const reformatted = JSON.parse(lines[3] ?? '') as AuditEvent;
    expect(eventHash(reformatted)).toBe(reformatted.hash);
    expect(spaced).toMatchObject({
      ok: false,
      checkedEvents: 3,
      firstBad: { seq: 3, reason: 'damaged_line' },
    });
    expect(spaced.firstBad?.message).toMatch(/^Line 4: .*canonical/);
    expect(events.length).toBeGreaterThan(4);
  });

  it('accepts lines of the earlier writer, which sorted `hash` among the other members', () => {
    const { events } = sampleJournal();
    const older = `${events.map((event) => canonicalJson(event)).join('\n')}\n`;
    expect(older).not.toBe(sampleJournal().bytes.toString('utf8'));
    expect(verifyJournalContents(parseJournal(older), { rerender })).toMatchObject({ ok: true });
  });

  it('reports a lost line as missing_event at its seq', () => {
    const { events } = sampleJournal();
    const result = verifyJournal([...events.slice(0, 4), ...events.slice(5)]);
    expect(result).toMatchObject({
      ok: false,
      checkedEvents: 4,
      firstBad: { seq: 4, reason: 'missing_event' },
    });
  });

  it('reports a duplicated line as bad_seq and swapped lines as missing_event', () => {
    const { events } = sampleJournal();
    const [third, fourth] = [events[3], events[4]];
    if (!third || !fourth) throw new Error('sample too short');
    expect(verifyJournal([...events.slice(0, 4), third, ...events.slice(4)]).firstBad).toMatchObject({
      seq: 4,
      reason: 'bad_seq',
    });
    expect(verifyJournal([...events.slice(0, 3), fourth, third, ...events.slice(5)]).firstBad).toMatchObject({
      seq: 3,
      reason: 'missing_event',
    });
  });

  it('reports an event altered after hashing as bad_hash, and a spliced chain as broken_link', () => {
    const { events } = sampleJournal();
    const altered = events.map((event) =>
      event.seq === 6 ? { ...event, ts: '2030-01-01T00:00:00.000Z' } : event,
    );
    expect(verifyJournal(altered).firstBad).toMatchObject({ seq: 6, reason: 'bad_hash' });
    const rehashedAt2 = rechain(events, (event) => (event.seq === 2 ? { ...event, ts: 'x' } : event));
    expect(verifyJournal([...events.slice(0, 3), ...rehashedAt2.slice(3)]).firstBad).toMatchObject({
      seq: 3,
      reason: 'broken_link',
    });
  });

  it('a re-chained forgery of history passes the chain but fails the first round rendered after it', () => {
    const { events } = sampleJournal();
    const forged = rechain(events, (event) =>
      event.type === 'HistoryAppended' && event.text === 'Tool result: status 200'
        ? { ...event, text: 'Tool result: status 500' }
        : event,
    );
    expect(verifyJournal(forged).ok).toBe(true);
    const inference = forged.find((event) => event.type === 'InferenceSubmitted' && event.round === 3);
    expect(verifyJournal(forged, { rerender })).toMatchObject({
      ok: false,
      checkedInferences: 3,
      firstBad: { seq: inference?.seq, reason: 'input_mismatch' },
    });
  });

  it('reports events after the end, another agent, and a journal that does not start with Started', () => {
    const { events } = sampleJournal();
    const afterEnd = rechain([...events, { ...events[1], seq: 99 } as AuditEvent], (event) => event);
    expect(verifyJournal(afterEnd).firstBad).toMatchObject({ seq: events.length, reason: 'after_end' });
    const otherAgent = rechain(events, (event) =>
      event.seq === 3 ? { ...event, agentId: 'agent-9' } : event,
    );
    expect(verifyJournal(otherAgent).firstBad).toMatchObject({ seq: 3, reason: 'agent_mismatch' });
    const headless = rechain(events.slice(1), (event) => event);
    expect(verifyJournal(headless).firstBad).toMatchObject({ seq: 0, reason: 'not_started' });
    expect(verifyJournal([]).firstBad).toMatchObject({ seq: 0, reason: 'missing_event' });
  });

  it('reports a re-render that throws as rerender_failed at that round', () => {
    const { events } = sampleJournal();
    const result = verifyJournal(events, {
      rerender: () => {
        throw new Error('unknown tool');
      },
    });
    expect(result.firstBad).toMatchObject({ seq: 1, reason: 'rerender_failed' });
    expect(result.firstBad?.message).toContain('unknown tool');
  });

  it('calls the re-render once per round, in order, with the whole event list', () => {
    const { events } = sampleJournal();
    const calls: number[] = [];
    verifyJournal(events, {
      rerender: (all, index) => {
        expect(all).toBe(events);
        calls.push(index);
        return rerender(all, index);
      },
    });
    expect(calls).toEqual(
      events.filter((event) => event.type === 'InferenceSubmitted').map((event) => event.seq),
    );
    expect(events.every((event) => event.agentId === AGENT_ID)).toBe(true);
  });
});

describe('journalDamage', () => {
  /** The sample journal's text with line `line` (1-based) replaced. */
  function withLine(line: number, replace: (text: string) => string): string {
    const lines = sampleJournal().bytes.toString('utf8').split('\n');
    lines[line - 1] = replace(lines[line - 1] ?? '');
    return lines.join('\n');
  }

  it('finds nothing wrong with an intact journal, one cut by a torn append, one still being written, or an empty one', () => {
    const { bytes } = sampleJournal();
    expect(journalDamage(parseJournal(bytes))).toBeUndefined();
    expect(journalDamage(parseJournal(bytes.subarray(0, bytes.length - 20)))).toBeUndefined();
    const unended = bytes.subarray(0, bytes.lastIndexOf(0x0a, bytes.length - 2) + 1);
    expect(parseJournal(unended).events.at(-1)?.type).not.toBe('Completed');
    expect(journalDamage(parseJournal(unended))).toBeUndefined();
    expect(journalDamage(parseJournal(''))).toBeUndefined();
  });

  it('names the first line that is not an event, with its line and seq', () => {
    const damage = journalDamage(parseJournal(withLine(5, () => '{not json')));
    expect(damage).toMatchObject({ line: 5, seq: 4, reason: 'unparseable' });
    expect(damageText(damage ?? ({} as never))).toMatch(/^line 5: Expected a JSON event, found invalid JSON/);
  });

  it('names an edited event that still parses, where the chain breaks', () => {
    const edited = withLine(3, (line) => line.replace('"round":1', '"round":7'));
    expect(edited).not.toBe(sampleJournal().bytes.toString('utf8'));
    expect(parseJournal(edited).problems).toEqual([]);
    expect(journalDamage(parseJournal(edited))).toMatchObject({ line: 3, seq: 2, reason: 'bad_hash' });
    const dropped = sampleJournal().bytes.toString('utf8').split('\n');
    dropped.splice(3, 1);
    expect(journalDamage(parseJournal(dropped.join('\n')))).toMatchObject({
      line: 4,
      seq: 3,
      reason: 'missing_event',
    });
  });

  it('names the earlier of an edit and a destroyed line after it', () => {
    const both = withLine(6, () => 'garbage').split('\n');
    both[1] = both[1]?.replace('"round":1', '"round":7') ?? '';
    expect(journalDamage(parseJournal(both.join('\n')))).toMatchObject({ line: 2, reason: 'bad_hash' });
  });

  it('checks the chain with the content hashes the reader computed, which are the events’ own', () => {
    const { bytes, events } = sampleJournal();
    const contents = parseJournal(bytes, { hashes: true });
    expect(contents.hashes).toEqual(events.map(eventHash));
    expect(contents.hashes).toEqual(events.map((event) => event.hash));
    // Only when asked: resume and the other readers do not pay a hash per line.
    expect(parseJournal(bytes).hashes).toBeUndefined();
  });
});
