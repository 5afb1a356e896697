import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { countTokens as cl100kCount } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as o200kCount } from 'gpt-tokenizer/encoding/o200k_base';
import { CL100K_TOKEN_SPLIT_REGEX, O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';
import { describe, expect, it } from 'vitest';
import { isTroupeError } from '../../src/errors.ts';
import { MAX_EXACT_PIECE } from '../../src/projection/constants.ts';
import {
  BpeCounter,
  boundSplitRegex,
  cl100kCounter,
  countCodePoints,
  counterByName,
  counterForModel,
  heuristicCounter,
  o200kCounter,
  type TokenCounter,
} from '../../src/projection/token-counter.ts';

describe('heuristic counter', () => {
  it('is ceil(code points / 4)', () => {
    expect(heuristicCounter.count('')).toBe(0);
    expect(heuristicCounter.count('a')).toBe(1);
    expect(heuristicCounter.count('abcd')).toBe(1);
    expect(heuristicCounter.count('abcde')).toBe(2);
  });

  it('counts a surrogate pair as one code point and a lone surrogate as one', () => {
    expect(countCodePoints('😀')).toBe(1);
    expect(countCodePoints('a😀b')).toBe(3);
    expect(countCodePoints('\ud83d')).toBe(1);
    expect(countCodePoints('\ude00\ud83d')).toBe(2);
    expect(countCodePoints('中文字')).toBe(3);
    expect(heuristicCounter.count('😀😀😀😀😀')).toBe(2);
  });
});

describe('BPE counters', () => {
  const samples = ['', 'Hello, world!', 'def f(x):\n    return x * 2\n', '日本語のテキスト', '😀 emoji'];

  it('agree with gpt-tokenizer', () => {
    for (const text of samples) {
      expect(o200kCounter.count(text)).toBe(o200kCount(text));
      expect(cl100kCounter.count(text)).toBe(cl100kCount(text));
    }
  });

  it('count special-token strings in tool output as plain text instead of throwing', () => {
    const text = 'log: <|endoftext|> and <|im_start|>';
    expect(() => o200kCount(text)).toThrow(/special token/);
    expect(o200kCounter.count(text)).toBe(o200kCount(text, { disallowedSpecial: new Set() }));
    expect(o200kCounter.count(text)).toBeGreaterThan(5);
    expect(cl100kCounter.count(text)).toBeGreaterThan(5);
  });
});

const PLAIN = { disallowedSpecial: new Set<string>() };
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Real prose and code: this repository's docs and sources. */
const realText = [
  readFileSync(path.join(repoRoot, 'README.md'), 'utf8'),
  ...readdirSync(path.join(repoRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => readFileSync(path.join(repoRoot, 'docs', f), 'utf8')),
  ...readdirSync(path.join(repoRoot, 'src/projection')).map((f) =>
    readFileSync(path.join(repoRoot, 'src/projection', f), 'utf8'),
  ),
];

/** Runs of one character class: each was a single BPE piece, quadratic to merge. */
const PATHOLOGICAL: Record<string, (n: number) => string> = {
  upper: (n) => 'A'.repeat(n),
  lower: (n) => 'a'.repeat(n),
  spaces: (n) => ' '.repeat(n),
  newlines: (n) => '\n'.repeat(n),
  crlf: (n) => '\r\n'.repeat(n / 2),
  dashes: (n) => '-'.repeat(n),
  slashes: (n) => '/\n'.repeat(n / 2),
  cjk: (n) => '中文'.repeat(n / 2),
  combining: (n) => 'e\u0301'.repeat(n / 2),
  emoji: (n) => '😀'.repeat(n / 2),
  spaceThenLetters: (n) => ` ${'x'.repeat(n)}'ll`,
};

describe('BPE counting on pathological text', () => {
  it('caps every unbounded quantifier of the split regexes and changes nothing else', () => {
    for (const original of [O200K_TOKEN_SPLIT_REGEX, CL100K_TOKEN_SPLIT_REGEX]) {
      const bounded = boundSplitRegex(original, 7);
      expect(bounded.source).not.toMatch(/[*+]/);
      expect(bounded.flags).toBe(original.flags);
      expect(bounded.source.replaceAll('{0,7}', '*').replaceAll('{1,7}', '+')).toBe(original.source);
    }
  });

  it('never hands the BPE merge a piece longer than about twice the bound', () => {
    for (const original of [O200K_TOKEN_SPLIT_REGEX, CL100K_TOKEN_SPLIT_REGEX]) {
      const bounded = boundSplitRegex(original, MAX_EXACT_PIECE);
      for (const [name, make] of Object.entries(PATHOLOGICAL)) {
        const text = make(20_000);
        let covered = 0;
        for (const [piece] of text.matchAll(bounded)) {
          expect([name, [...piece].length <= 2 * MAX_EXACT_PIECE + 4]).toEqual([name, true]);
          covered += piece.length;
        }
        expect(covered).toBe(text.length);
      }
    }
  });

  it.each([
    ['o200k', o200kCounter, o200kCount, O200K_TOKEN_SPLIT_REGEX],
    ['cl100k', cl100kCounter, cl100kCount, CL100K_TOKEN_SPLIT_REGEX],
  ] as const)(
    '%s: a long run is counted close to the exact count and reported as an estimate',
    (_n, counter, exact, split) => {
      const bpe = counter;
      let estimated = 0;
      for (const [name, make] of Object.entries(PATHOLOGICAL)) {
        // Long enough to be cut three times, short enough for the exact quadratic count.
        const text = make(4 * MAX_EXACT_PIECE);
        const want = exact(text, PLAIN);
        const got = bpe.count(text);
        const longPiece = [...text.matchAll(split)].some(([piece]) => piece.length > 2 * MAX_EXACT_PIECE);
        if (!longPiece) {
          // Not pathological for this encoding (`/\n` splits into short pieces for cl100k).
          expect([name, got]).toEqual([name, want]);
          continue;
        }
        estimated += 1;
        // Each of the (at most 4) cuts can split what would have been one or two tokens.
        expect([name, Math.abs(got - want) <= 2 * 4 + want * 0.01]).toEqual([name, true]);
        expect([name, bpe.isExact(text)]).toEqual([name, false]);
      }
      expect(estimated).toBeGreaterThanOrEqual(9);
    },
  );

  it('is exactly gpt-tokenizer on real prose and code, and says so', () => {
    expect(realText.length).toBeGreaterThan(20);
    for (const text of realText) {
      expect(o200kCounter.count(text)).toBe(o200kCount(text, PLAIN));
      expect(cl100kCounter.count(text)).toBe(cl100kCount(text, PLAIN));
      expect(o200kCounter.isExact(text)).toBe(true);
    }
  });

  it('is exact for runs up to the bound and an estimate just past it', () => {
    const counter = new BpeCounter('o200k', 16);
    expect(counter.count('x'.repeat(16))).toBe(o200kCount('x'.repeat(16)));
    expect(counter.isExact(`${'x'.repeat(16)} ${'y'.repeat(16)}`)).toBe(true);
    expect(counter.isExact('x'.repeat(17))).toBe(false);
  });
});

describe('counterForModel', () => {
  const cases: [string, TokenCounter][] = [
    ['gpt-4o', o200kCounter],
    ['gpt-4o-mini-2024-07-18', o200kCounter],
    ['chatgpt-4o-latest', o200kCounter],
    ['gpt-4.1-nano', o200kCounter],
    ['gpt-4.5-preview', o200kCounter],
    ['gpt-5', o200kCounter],
    ['gpt-5.2-codex', o200kCounter],
    ['o1', o200kCounter],
    ['o3-mini', o200kCounter],
    ['o4-mini-deep-research', o200kCounter],
    ['gpt-oss-120b', o200kCounter],
    ['openai/gpt-4o', o200kCounter],
    ['GPT-4O', o200kCounter],
    ['gpt-4', cl100kCounter],
    ['gpt-4-turbo-2024-04-09', cl100kCounter],
    ['gpt-4-0613', cl100kCounter],
    ['gpt-3.5-turbo', cl100kCounter],
    ['claude-sonnet-4-5', heuristicCounter],
    ['sonnet', heuristicCounter],
    ['gemini-2.5-pro', heuristicCounter],
    ['llama-3.1-70b', heuristicCounter],
    ['default', heuristicCounter],
    ['omni-model', heuristicCounter],
  ];

  it.each(cases)('%s uses its family counter', (model, counter) => {
    expect(counterForModel(model)).toBe(counter);
  });

  it('lets an override win, by name or as a counter', () => {
    const custom: TokenCounter = { name: 'custom', count: () => 1 };
    expect(counterForModel('claude-sonnet-4-5', 'o200k')).toBe(o200kCounter);
    expect(counterForModel('gpt-4o', 'heuristic')).toBe(heuristicCounter);
    expect(counterForModel('gpt-4o', custom)).toBe(custom);
  });

  it('rejects an unknown counter name', () => {
    let error: unknown;
    try {
      counterByName('p50k');
    } catch (caught) {
      error = caught;
    }
    expect(isTroupeError(error) && error.code).toBe('unknown_token_counter');
  });
});
