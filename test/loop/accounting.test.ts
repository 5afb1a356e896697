import { describe, expect, it } from 'vitest';
import { boundedCount, ESTIMATE_COUNTED_CHARS, PieceCounts } from '../../src/loop/accounting.ts';
import { o200kCounter, type TokenCounter } from '../../src/projection/token-counter.ts';

/** o200k, counting how many characters it was asked to count. */
function tallied(): { counter: TokenCounter; chars: () => number } {
  let chars = 0;
  return {
    counter: {
      name: 'o200k',
      count: (text) => {
        chars += text.length;
        return o200kCounter.count(text);
      },
    },
    chars: () => chars,
  };
}

const entry = (i: number): string =>
  `Tool result (wait_for_instruction): Instruction: lane ${i}/${i * 7}\n\n`;

describe('PieceCounts', () => {
  it('gives boundedCount for every text of a sequence: growing, changed in the middle, shrinking, past the counted limit', () => {
    const memo = new PieceCounts();
    let text = 'Task: wait for instructions.\n\n';
    const texts: string[] = [];
    for (let i = 0; i < 400; i += 1) {
      text += entry(i);
      texts.push(text);
    }
    texts.push(`${text.slice(0, 5000)}[Tool output was displayed here]${text.slice(5100)}`);
    texts.push(text.slice(0, 9000), text.slice(0, 8192), '', text);
    texts.push(text.repeat(Math.ceil((ESTIMATE_COUNTED_CHARS * 1.5) / text.length)));
    for (const sample of texts)
      expect(memo.count(o200kCounter, sample)).toBe(boundedCount(o200kCounter, sample));
  });

  it('re-counts only the pieces that changed when the text grows at its end', () => {
    const whole = tallied();
    const memo = tallied();
    const pieces = new PieceCounts();
    let text = '';
    for (let i = 0; i < 600; i += 1) {
      text += entry(i);
      boundedCount(whole.counter, text);
      pieces.count(memo.counter, text);
    }
    // Without the memo every request counts the whole text again (quadratic); with it, each
    // counts at most its last piece (8,192 characters) plus whatever became a new piece.
    expect(text.length).toBeGreaterThan(30_000);
    expect(memo.chars()).toBeLessThan(600 * 8192);
    expect(memo.chars() * 3).toBeLessThan(whole.chars());
  });

  it('starts over when the counter changes', () => {
    const memo = new PieceCounts();
    const text = entry(1).repeat(500);
    const halved: TokenCounter = { name: 'half', count: (t) => Math.ceil(t.length / 2) };
    expect(memo.count(o200kCounter, text)).toBe(boundedCount(o200kCounter, text));
    expect(memo.count(halved, text)).toBe(boundedCount(halved, text));
  });
});
