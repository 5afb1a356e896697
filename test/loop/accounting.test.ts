import { describe, expect, it } from 'vitest';
import { boundedCount, ESTIMATE_COUNTED_CHARS, PieceCounts } from '../../src/loop/accounting.ts';
import { BpeCounter, o200kCounter, type TokenCounter } from '../../src/projection/token-counter.ts';

/** o200k, counting how many characters it was asked to count. */
class TalliedO200k extends BpeCounter {
  counted = 0;

  constructor() {
    super('o200k');
  }

  override count(text: string): number {
    this.counted += text.length;
    return super.count(text);
  }
}

function tallied(): { counter: TokenCounter; chars: () => number } {
  const counter = new TalliedO200k();
  return { counter, chars: () => counter.counted };
}

const entry = (i: number): string =>
  `Tool result (wait_for_instruction): Instruction: lane ${i}/${i * 7}\n\n`;

describe('PieceCounts', () => {
  it('gives boundedCount for every text of a sequence: growing, changed in the middle, shrinking, past the counted limit', () => {
    const memo = new PieceCounts();
    let text = 'Task: wait for instructions.\n\n';
    const texts: string[] = [];
    for (let i = 0; i < 250; i += 1) {
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
    for (let i = 0; i < 400; i += 1) {
      text += entry(i);
      boundedCount(whole.counter, text);
      pieces.count(memo.counter, text);
    }
    // Without the memo every request counts the whole text again (quadratic); with it, each
    // counts at most its last piece (8,192 characters) plus whatever became a new piece.
    // counts what was appended (from the last safe cut before it), about the text's length in all.
    expect(text.length).toBeGreaterThan(25_000);
    expect(memo.chars()).toBeLessThan(3 * text.length);
    expect(memo.chars() * 100).toBeLessThan(whole.chars());
  });

  it('gives boundedCount for text grown from random letters, digits, spaces, newlines, punctuation, CJK and emoji', () => {
    const alphabet = [
      'a',
      'B',
      'z',
      '7',
      '42',
      ' ',
      '  ',
      '\n',
      '\n\n',
      '.',
      ',',
      "'s",
      '-',
      '/',
      '日本',
      '語',
      '😀',
      'é',
      '\t',
    ];
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    const memo = new PieceCounts();
    let text = '';
    for (let step = 0; step < 200; step += 1) {
      const length = 1 + random(80);
      for (let i = 0; i < length; i += 1) text += alphabet[random(alphabet.length)];
      expect(memo.count(o200kCounter, text)).toBe(boundedCount(o200kCounter, text));
    }
  });

  it('starts over when the counter changes', () => {
    const memo = new PieceCounts();
    const text = entry(1).repeat(500);
    const halved: TokenCounter = { name: 'half', count: (t) => Math.ceil(t.length / 2) };
    expect(memo.count(o200kCounter, text)).toBe(boundedCount(o200kCounter, text));
    expect(memo.count(halved, text)).toBe(boundedCount(halved, text));
  });
});
