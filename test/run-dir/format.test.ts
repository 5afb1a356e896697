import { describe, expect, it } from 'vitest';
import { describeAsk } from '../../src/providers/simulated-plan.ts';
import { excerpt, printable, stripControl, terminalJson } from '../../src/run-dir/format.ts';

describe('text a model wrote, made printable', () => {
  it('drops escape sequences, bells, NUL, DEL, C1 controls and bidi overrides, keeping tabs and newlines', () => {
    const text = 'a\u001b[2J\u001b]0;title\u0007b\u0000c\u007fd\u009b31me\r\tf\ng\u202eh\u2066i';
    expect(stripControl(text)).toBe('abcde\tf\nghi');
  });

  it('masks credentials too, and excerpt builds on it', () => {
    expect(printable('key sk-proj-AbCdEf0123456789GhIj\u0007')).toBe('key [REDACTED]');
    expect(excerpt('line one\u001b[31m\nline two', 40)).toBe('line one line two');
  });

  it("a cut just after the text's own ellipsis shows one ellipsis, not two", () => {
    // The demo's finished lines read `… one ris...;…`: the simulated model cut its summary, then
    // the display cut it again.
    const ask = describeAsk(
      `${'c'.repeat(90)}\nReview examples/fanout.ts: read it and note one strength and one risk. Then write it down.`,
      'Review examples/fanout.ts: read it and note one strength and one risk. Then write it down.',
    );
    expect(ask).toContain('one risk. Then wri…; context: ');
    expect(ask).not.toContain('...');
    const line = `[simulated] ${ask}`;
    // Cut by the display just after `…;`.
    expect(excerpt(line, line.indexOf(';') + 2)).toBe(
      '[simulated] Task: Review examples/fanout.ts: read it and note one strength and one risk. Then wri…',
    );
    expect(excerpt('note one strength and one ris...; context: more', 34)).toBe(
      'note one strength and one ris…',
    );
    expect(excerpt('plain words that run on and on', 12)).toBe('plain words…');
  });

  it('escapes in JSON lines what JSON.stringify leaves raw, keeping the value', () => {
    const value = { text: 'a\u009b31mb\u202ec\u007fd\u2028e', n: 1 };
    const line = terminalJson(value);
    expect(line).toBe('{"text":"a\\u009b31mb\\u202ec\\u007fd\\u2028e","n":1}');
    expect(JSON.parse(line)).toEqual(value);
  });
});
