import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunComparison } from '../../src/compare/compare.ts';
import { compareHtmlPieces, renderCompareHtml } from '../../src/compare/compare-html.ts';
import { compareText, compareTextPieces } from '../../src/compare/compare-text.ts';
import type { GateResult } from '../../src/compare/gate.ts';
import { COMPARE_JSON_PIECE_CHARS } from '../../src/constants.ts';
import { table, tableLines } from '../../src/run-dir/format.ts';

/**
 * A comparison of two real runs (80 items: the 4 of test/compare/helpers.ts 20 times over) and
 * what `compareText` and `renderCompareHtml` made of it when they built one whole string, made
 * with the code before they wrote a piece at a time.
 */
const FIXTURES = path.join(import.meta.dirname, '../fixtures/compare');
const { comparison, gates } = JSON.parse(readFileSync(path.join(FIXTURES, 'comparison.json'), 'utf8')) as {
  comparison: RunComparison;
  gates: GateResult[];
};
const fixture = (name: string): string => readFileSync(path.join(FIXTURES, name), 'utf8');
const NOW = new Date('2026-01-02T03:04:05Z');

/** The comparison with its items `copies` times over (keys kept distinct). */
function grown(copies: number): RunComparison {
  const items = [];
  for (let copy = 0; copy < copies; copy += 1)
    for (const item of comparison.items) items.push({ ...item, key: `${item.key}+${copy}` });
  return { ...comparison, items };
}

describe('troupe compare text and HTML, a piece at a time', () => {
  it('makes, byte for byte, the text and the page it made whole', () => {
    expect([...compareTextPieces(comparison, gates, { columns: 120 })].join('')).toBe(fixture('changed.txt'));
    expect([...compareTextPieces(comparison, gates, { columns: 100, all: true })].join('')).toBe(
      fixture('all.txt'),
    );
    expect([...compareHtmlPieces(comparison, gates, NOW)].join('')).toBe(fixture('page.html'));
    expect(compareText(comparison, gates, { columns: 100, all: true })).toBe(fixture('all.txt'));
    expect(renderCompareHtml(comparison, gates, NOW)).toBe(fixture('page.html'));
  });

  it('never makes the text of every item or the whole page one string: pieces of whole lines, each bounded', () => {
    const big = grown(16);
    const text = [...compareTextPieces(big, gates, { columns: 100, all: true })];
    expect(text.length).toBeGreaterThan(1);
    for (const piece of text) {
      expect(piece.endsWith('\n')).toBe(true);
      expect(piece.length).toBeLessThan(2 * COMPARE_JSON_PIECE_CHARS);
    }
    expect(text.join('')).toContain(`items (${big.items.length} of ${big.items.length}):`);
    const page = [...compareHtmlPieces(big, gates, NOW)];
    expect(page.length).toBeGreaterThan(1);
    for (const piece of page) expect(piece.length).toBeLessThan(2 * COMPARE_JSON_PIECE_CHARS);
    expect(page.join('').match(/<tr class="item /g)?.length).toBe(big.items.length);
  });

  it('lays out a table a row at a time as table() lays it out whole', () => {
    const rows = [
      ['ITEM', 'OUTCOME', 'NOTE'],
      ['a', 'completed', ''],
      ['日本語', 'failed (timeout)', 'x'],
      ['b-long-name', '-', 'last'],
    ];
    expect([...tableLines(() => rows)]).toEqual(table(rows));
  });
});
