/**
 * Configured credentials are masked literally, whatever their shape (registerSecretValues). In a
 * file of its own: registration is process-wide, and would change what the other redaction tests
 * see.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/journal/canonical-json.ts';
import { hashInput } from '../../src/journal/events.ts';
import { JOURNAL_MASKING, redactText, registerSecretValues } from '../../src/journal/redact.ts';

// Registered nowhere else: test files share their process (vitest `isolate: false`).
const KEY = 'lit_Wm4QpZ7tK2vN9xRb5cYh3sLd8fGj1eUa';
const LONG = `Read this:\n${'The quick brown fox jumps over the lazy dog. '.repeat(10)}key ${KEY} end`;

describe('configured credentials', () => {
  it('are masked once registered, in short and long texts masked before (no stale cache)', () => {
    const short = `Incorrect API key provided: ${KEY}.`;
    // Masked (and cached) before the key is known: nothing matches its shape.
    expect(redactText(short)).toBe(short);
    expect(canonicalJson({ text: LONG }, JOURNAL_MASKING)).toContain(KEY);
    const before = hashInput('S', LONG, []);

    registerSecretValues([KEY, 'short', undefined, 'two\nlines here', 'REDACTED']);
    expect(redactText(short)).toBe('Incorrect API key provided: [REDACTED].');
    expect(canonicalJson({ text: LONG }, JOURNAL_MASKING)).not.toContain(KEY);
    // Values under 8 characters, with a line break, or inside the mask are not registered.
    expect(redactText('a short word')).toBe('a short word');
    expect(redactText('two\nlines here')).toBe('two\nlines here');
    expect(redactText('[REDACTED]')).toBe('[REDACTED]');

    // Idempotent, and line by line the same as whole: the two properties input hashes rely on.
    const masked = redactText(LONG);
    expect(redactText(masked)).toBe(masked);
    expect(LONG.split('\n').map(redactText).join('\n')).toBe(masked);
    // A verifier that never saw the key re-renders the masked journal text and gets the same hash.
    const after = hashInput('S', LONG, []);
    expect(after).not.toBe(before);
    expect(hashInput('S', masked, [])).toBe(after);
  });
});
