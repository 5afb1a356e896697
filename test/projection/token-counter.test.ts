import { countTokens as cl100kCount } from 'gpt-tokenizer/encoding/cl100k_base';
import { countTokens as o200kCount } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { isTroupeError } from '../../src/errors.ts';
import {
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
