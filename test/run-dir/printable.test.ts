import { describe, expect, it } from 'vitest';
import { printable as terminalText } from '../../src/run-dir/format.ts';

describe('printable', () => {
  it('removes escape sequences with their parameters and other control characters', () => {
    expect(
      terminalText('a\u001b[31mred\u001b[0m \u001b]0;title\u0007b \u001b]8;;x\u001b\\c\r\u0000\u007f\u009bd'),
    ).toBe('ared b c'); // U+009B is a one-byte CSI: 'd' is its final byte
  });

  it('removes bidirectional overrides that reorder what a terminal shows', () => {
    expect(terminalText('x\u202eevil\u2066y')).toBe('xevily');
  });

  it('keeps newlines, tabs and ordinary Unicode', () => {
    expect(terminalText('a\tb\nc → ✓ é')).toBe('a\tb\nc → ✓ é');
  });

  it('masks secret-looking strings', () => {
    expect(terminalText('key sk-abcdefghijklmnop1234 here')).not.toContain('sk-abcdefghijklmnop1234');
  });
});
