import { describe, expect, it } from 'vitest';
import { countFixed, FIXED_TOKEN_CACHE_ENTRIES } from '../../src/loop/fixed-tokens.ts';
import type { TokenCounter } from '../../src/projection/token-counter.ts';

/** A counter that counts characters and remembers what it was asked. */
function countingCounter(name: string): TokenCounter & { readonly asked: string[] } {
  const asked: string[] = [];
  return {
    name,
    asked,
    count: (text) => {
      asked.push(text);
      return text.length;
    },
  };
}

describe('fixed token counts', () => {
  it('a text is counted once per counter, and each counter counts it itself', () => {
    const a = countingCounter('a');
    const b = countingCounter('b');
    expect(countFixed(a, 'system prompt')).toBe(13);
    expect(countFixed(a, 'system prompt')).toBe(13);
    expect(countFixed(b, 'system prompt')).toBe(13);
    expect(a.asked).toEqual(['system prompt']);
    expect(b.asked).toEqual(['system prompt']);
  });

  it('remembers at most its bound of texts, forgetting the oldest first', () => {
    const counter = countingCounter('bounded');
    for (let i = 0; i <= FIXED_TOKEN_CACHE_ENTRIES; i += 1) countFixed(counter, `text ${i}`);
    countFixed(counter, `text ${FIXED_TOKEN_CACHE_ENTRIES}`);
    countFixed(counter, 'text 0');
    expect(counter.asked.filter((text) => text === 'text 0')).toHaveLength(2);
    expect(counter.asked.filter((text) => text === `text ${FIXED_TOKEN_CACHE_ENTRIES}`)).toHaveLength(1);
  });
});
