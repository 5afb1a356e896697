import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { compareRunDirs, type RunComparison } from '../../src/compare/compare.ts';
import { compareJsonPieces } from '../../src/compare/compare-json.ts';
import { checkGates, parseGate } from '../../src/compare/gate.ts';
import { COMPARE_JSON_PIECE_CHARS } from '../../src/constants.ts';
import { redactText, redactValue } from '../../src/journal/redact.ts';
import { terminalJson } from '../../src/run-dir/format.ts';
import { captureIO } from '../run-dir/helpers.ts';
import { makeRuns, type Runs } from './helpers.ts';

let runs: Runs;
/** Run B with item `a`'s answer holding a credential, terminal controls and line separators. */
let runB: string;
const ANSWER =
  'key sk-proj-abcdefghijklmnop1234 then \u009b31m red \u2028 sep \u202e bidi "password": "hunter2" -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----';

beforeAll(async () => {
  runs = await makeRuns();
  runB = `${runs.runB}-secret`;
  cpSync(runs.runB, runB, { recursive: true });
  const file = path.join(runB, 'results.jsonl');
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  const edited = lines.map((text) => {
    const { result: _result, ...line } = JSON.parse(text) as Record<string, unknown>;
    return line.label === 'a' ? JSON.stringify({ ...line, answer: ANSWER }) : text;
  });
  writeFileSync(file, `${edited.join('\n')}\n`);
});
afterAll(() => runs.cleanup());

/** What `troupe compare --json` printed before it printed a piece at a time: the whole document at once. */
function wholeDocument(comparison: RunComparison, gates: ReturnType<typeof checkGates>): string {
  return redactText(`${terminalJson(redactValue({ ...comparison, gates }), 2)}\n`);
}

describe('troupe compare --json', () => {
  it('prints, byte for byte, the document it printed whole: same members, order, masking and escapes', async () => {
    const comparison = compareRunDirs(runs.runA, runB);
    const gates = checkGates(comparison, [parseGate('mentions:-0.5')]);
    const io = captureIO();
    expect(await main(['compare', runs.runA, runB, '--json', '--gate', 'mentions:-0.5'], io)).toBe(0);
    // Latencies and tokens come from the files: the same comparison read twice is the same.
    expect(io.out()).toBe(wholeDocument(comparison, gates));
    expect(io.out()).toContain('[REDACTED]');
    expect(io.out()).toContain('\\u009b31m');
    expect(io.out()).not.toContain('sk-proj-abcdefghijklmnop1234');
  });

  it('makes the same document as the whole one for empty lists, gates and secret-named members', () => {
    const comparison = compareRunDirs(runs.runA, runB);
    const cases: [RunComparison, ReturnType<typeof checkGates>][] = [
      [comparison, []],
      [{ ...comparison, items: [] }, checkGates(comparison, [parseGate('mentions')])],
      [{ ...comparison, scorers: {} }, []],
      // A scorer named like a credential: its members are masked by key in both.
      [
        {
          ...comparison,
          scorers: {
            api_token: {
              ...(comparison.scorers.mentions as RunComparison['scorers'][string]),
              name: 'api_token',
            },
          },
        },
        [],
      ],
    ];
    for (const [value, gates] of cases) {
      const pieces = [...compareJsonPieces(value, gates)];
      expect(redactText(pieces.join(''))).toBe(wholeDocument(value, gates));
      for (const piece of pieces) expect(piece.endsWith('\n')).toBe(true);
    }
  });

  it('writes a large document in pieces of bounded size that each end a line, never the whole at once', async () => {
    const comparison = compareRunDirs(runs.runA, runB);
    const item = comparison.items[0];
    if (item === undefined) throw new Error('no item');
    const many: RunComparison = {
      ...comparison,
      items: Array.from({ length: 2000 }, (_, index) => ({ ...item, key: `#${index}` })),
    };
    const pieces = [...compareJsonPieces(many, [])];
    const whole = wholeDocument(many, []);
    expect(redactText(pieces.join(''))).toBe(whole);
    const longestItem = terminalJson(redactValue(item), 2).length * 2;
    expect(pieces.length).toBeGreaterThan(whole.length / (COMPARE_JSON_PIECE_CHARS + longestItem));
    for (const piece of pieces) {
      expect(piece.length).toBeLessThan(COMPARE_JSON_PIECE_CHARS + longestItem);
      expect(piece.endsWith('\n')).toBe(true);
    }
  });
});
