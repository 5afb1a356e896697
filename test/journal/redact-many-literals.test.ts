/**
 * Many configured credentials (a process with dozens of token-bearing MCP servers registers two
 * values per credential) are all masked, and past the bound registering fails instead of leaving
 * the new ones unmasked. In a file of its own: registration is process-wide.
 */
import { describe, expect, it } from 'vitest';
import { hasErrorCode } from '../../src/errors.ts';
import { MAX_LITERAL_SECRETS } from '../../src/journal/constants.ts';
import { redactText, registerSecretValues } from '../../src/journal/redact.ts';

/** A distinct value of no known credential shape, registered nowhere else. */
function secret(tag: string, i: number): string {
  return `mnyLit${tag}${i.toString(36).padStart(4, '0')}Qz7Vw`;
}

describe('many configured credentials', () => {
  it('masks every one of 100 registered values (the 65th and later were left as they were)', () => {
    const values = Array.from({ length: 100 }, (_, i) => secret('a', i));
    // Registered as MCP servers do: one server at a time, the token with and without its scheme.
    for (const value of values) registerSecretValues([`Bearer ${value}`, value]);
    for (const value of values) {
      expect(redactText(`server said: token ${value} rejected`)).toBe(
        'server said: token [REDACTED] rejected',
      );
    }
    const last = values.at(-1) ?? '';
    // Two in one text, the scheme-bearing value whole, and idempotence.
    const both = `${values[3]} and ${last}, header Bearer ${values[70]}.`;
    expect(redactText(both)).toBe('[REDACTED] and [REDACTED], header [REDACTED].');
    expect(redactText(redactText(both))).toBe(redactText(both));
    expect(redactText('nothing here but prose and numbers 12345678')).toBe(
      'nothing here but prose and numbers 12345678',
    );
  });

  it('refuses, with a typed error, values past the bound rather than leave them unmasked', () => {
    const values = Array.from({ length: MAX_LITERAL_SECRETS + 1 }, (_, i) => secret('b', i));
    let thrown: unknown;
    try {
      registerSecretValues(values);
    } catch (error) {
      thrown = error;
    }
    expect(hasErrorCode(thrown, 'too_many_secrets')).toBe(true);
    // None of the batch was added: what was registered before still masks, the refused do not.
    expect(redactText(`x ${secret('a', 5)} y`)).toBe('x [REDACTED] y');
    expect(redactText(`x ${values[0]} y`)).toBe(`x ${values[0]} y`);
  });
});
