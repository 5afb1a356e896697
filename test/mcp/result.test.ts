import { describe, expect, it } from 'vitest';
import { toOutcome } from '../../src/mcp/tools.ts';

describe('structured content of a result', () => {
  it('is kept as data within the bound, and left out past it, saying so', () => {
    expect(toOutcome({ content: [{ type: 'text', text: 'hi' }], structuredContent: { a: 1 } })).toEqual({
      ok: true,
      text: 'hi',
      data: { a: 1 },
    });
    const huge = { items: Array.from({ length: 30_000 }, (_, i) => `item ${i}`) };
    const outcome = toOutcome({ content: [{ type: 'text', text: 'many' }], structuredContent: huge });
    expect(outcome.data).toBeUndefined();
    expect(outcome.text).toMatch(
      /^many\n\[the structured content \(\d+ characters of JSON, over 100000\) was not kept\]$/,
    );
  });
});
