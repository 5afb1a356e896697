/**
 * The BPE ledger counts a render exactly from per-section counts. These tests check the safe-cut
 * claim it rests on against gpt-tokenizer itself, on adversarial strings and on real text.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Projection } from '../../src/projection/projection.ts';
import { findCutRange, isSafeCut } from '../../src/projection/safe-cuts.ts';
import { BpeCounter, cl100kCounter, o200kCounter } from '../../src/projection/token-counter.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const corpusDir = path.resolve(repoRoot, 'test/fixtures/corpus');

function corpusFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.(md|json|sse)$/.test(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}

const corpus = [
  ...corpusFiles(path.join(corpusDir, 'agents-md')),
  ...corpusFiles(path.join(corpusDir, 'agent-definitions')).slice(0, 40),
  ...corpusFiles(path.join(corpusDir, 'provider-streams')),
].map((file) => readFileSync(file, 'utf8'));

/** Characters that sit on every branch of the split regexes, weighted towards cuts and seams. */
const LETTERS = ['a', 'b', 'Z', 'é', 'ß', 'Ω', '中', 'ｱ', 'ǅ', 'ʰ', 'İ', '𝐀'];
const DIGITS = ['1', '9', '٣', '½', '²'];
const SPACES = [' ', ' ', ' ', '  ', '\n', '\n', '\r\n', '\t', '\u00a0'];
const PUNCTUATION = ['.', ',', '/', "'", "'s", "'LL", '-', '"', '#', '('];
const ODD = ['\u0301', '😀', '\ud83d', '<|endoftext|>'];
const WORDISH = ['word ', ' word', 'x\ny', 'a1', '7b'];
const TRICKY = [...LETTERS, ...DIGITS, ...SPACES, ...PUNCTUATION, ...ODD, ...WORDISH];
const tricky = fc.array(fc.constantFrom(...TRICKY), { maxLength: 40 }).map((parts) => parts.join(''));
const anyText = fc.oneof(
  { arbitrary: tricky, weight: 4 },
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ maxLength: 40 }),
);

const counters = [o200kCounter, cl100kCounter];

/** Counters that cut runs longer than 5 code points, with text full of such runs: the ledger must
 * stay exact when long pieces are counted in chunks. */
const cuttingCounters = [new BpeCounter('o200k', 5), new BpeCounter('cl100k', 5)];
const RUNS = [
  'AAAAAAAAAAAA',
  'aaaaaaaaaaaaa',
  '            ',
  '\n\n\n\n\n\n\n',
  '------------',
  '中中中中中中中中中中中中',
  '////\n\n\n\n',
];
const withRuns = fc
  .array(fc.constantFrom(...TRICKY, ...RUNS, ...RUNS), { maxLength: 30 })
  .map((parts) => parts.join(''));

describe('safe cuts', () => {
  it('finds cuts only where the rule says', () => {
    expect(isSafeCut('ab cd', 2)).toBe(true);
    expect(isSafeCut('ab\ncd', 2)).toBe(true);
    expect(isSafeCut('ab12', 2)).toBe(true);
    expect(isSafeCut('12ab', 2)).toBe(true);
    expect(isSafeCut('ab. cd', 3)).toBe(false);
    expect(isSafeCut('ab  cd', 2)).toBe(false);
    expect(isSafeCut('ab 12', 2)).toBe(false);
    expect(isSafeCut('abcd', 2)).toBe(false);
    expect(isSafeCut('ab ', 2)).toBe(false);
    expect(findCutRange('no-cuts-here')).toBeUndefined();
    expect(findCutRange('one two three')).toEqual({ first: 3, last: 7 });
  });

  it.each(counters.map((c) => [c.name, c] as const))(
    '%s: count(x) = count(x[..i]) + count(x[i..]) at every safe cut',
    (_name, counter) => {
      let cuts = 0;
      fc.assert(
        fc.property(anyText, (text) => {
          const whole = counter.count(text);
          for (let i = 1; i < text.length; i++) {
            if (isSafeCut(text, i)) {
              cuts++;
              expect(counter.count(text.slice(0, i)) + counter.count(text.slice(i))).toBe(whole);
            }
          }
        }),
        { numRuns: 1000 },
      );
      expect(cuts).toBeGreaterThan(400);
    },
  );

  it.each(cuttingCounters.map((c) => [c.name, c] as const))(
    '%s with long pieces cut: count(x) = count(x[..i]) + count(x[i..]) at every safe cut',
    (_name, counter) => {
      fc.assert(
        fc.property(withRuns, (text) => {
          const whole = counter.count(text);
          for (let i = 1; i < text.length; i++) {
            if (isSafeCut(text, i))
              expect(counter.count(text.slice(0, i)) + counter.count(text.slice(i))).toBe(whole);
          }
        }),
        { numRuns: 500 },
      );
    },
  );

  it('holds at every safe cut of real text', () => {
    for (const text of corpus.slice(0, 12)) {
      const sample = text.slice(0, 3000);
      for (const counter of counters) {
        const whole = counter.count(sample);
        for (let i = 1; i < sample.length; i += 7) {
          if (isSafeCut(sample, i)) {
            expect(counter.count(sample.slice(0, i)) + counter.count(sample.slice(i))).toBe(whole);
          }
        }
      }
    }
  });
});

describe('exact BPE ledger', () => {
  it('per-section counts plus separators are not enough: seams merge', () => {
    for (const counter of counters) {
      const sections = ['Done.', '\nNext', 'trailing spaces   '];
      const naive = sections.reduce((sum, s) => sum + counter.count(s), 0) + 2 * counter.count('\n\n');
      expect(counter.count(sections.join('\n\n'))).not.toBe(naive);
      const p = new Projection({ context: sections, counter, reserveTokens: 0 });
      expect(p.renderTokens()).toBe(counter.count(sections.join('\n\n')));
    }
  });

  it.each(counters.map((c) => [c.name, c] as const))(
    '%s: a projection of adversarial sections counts exactly like its render',
    (_name, counter) => {
      fc.assert(
        fc.property(
          fc.array(anyText, { maxLength: 12 }),
          fc.array(anyText, { maxLength: 12 }),
          (context, entries) => {
            const p = new Projection({ context, counter, reserveTokens: 0 });
            for (const entry of entries) p.pushHistory(entry);
            expect(p.renderTokens()).toBe(counter.count(p.render()));
          },
        ),
        { numRuns: 150 },
      );
    },
  );

  it.each(cuttingCounters.map((c) => [c.name, c] as const))(
    '%s with long pieces cut: a projection counts exactly like its render',
    (_name, counter) => {
      fc.assert(
        fc.property(
          fc.array(withRuns, { maxLength: 8 }),
          fc.array(withRuns, { maxLength: 8 }),
          (context, entries) => {
            const p = new Projection({ context, counter, reserveTokens: 0 });
            for (const entry of entries) p.pushHistory(entry);
            expect(p.renderTokens()).toBe(counter.count(p.render()));
          },
        ),
        { numRuns: 150 },
      );
    },
  );

  it('counts projections built from real text exactly, through every kind of change', () => {
    const random = seeded(42);
    let checks = 0;
    for (const counter of counters) {
      const p = new Projection({ context: [corpus[0]?.slice(0, 2000) ?? ''], task: 'Review.', counter });
      for (let i = 0; i < 300; i++) {
        const source = corpus[Math.floor(random() * corpus.length)] ?? '';
        const start = Math.floor(random() * source.length);
        const text = source.slice(start, start + Math.floor(random() * 1200));
        const key = `k${Math.floor(random() * 12)}`;
        const roll = random();
        if (roll < 0.45) p.pushHistory(text, roll < 0.2 ? [key] : []);
        else if (roll < 0.8) p.applyUpdates([{ key, text }]);
        else if (roll < 0.9) p.applyUpdates([{ key, text: null }]);
        else p.addToolResult({ text, ok: true, stateUpdates: [{ key, text }], displayedStateKeys: [key] });
        if (i % 10 === 0) {
          expect(p.renderTokens()).toBe(counter.count(p.render()));
          checks++;
        }
      }
      expect(p.renderTokens()).toBe(counter.count(p.render()));
    }
    expect(checks).toBe(60);
  });
});

/** Deterministic PRNG (mulberry32) so a failure reproduces. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
