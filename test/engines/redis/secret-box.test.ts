/**
 * The seal on credentials a worker sends its supervisor through Redis: only the supervisor's key
 * opens it, and whatever a signal holds (it comes from Redis: anyone who can write there can send
 * one) the supervisor opens no more than a worker sends, never throws, and says why it refuses.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  MAX_FORWARDED_SECRET_CHARS,
  MAX_SEALED_SECRETS_CHARS,
  SECRETS_PER_SIGNAL,
} from '../../../src/engines/redis/constants.ts';
import { SecretKeyPair, sealSecrets } from '../../../src/engines/redis/secret-box.ts';
import type { SealedSecrets } from '../../../src/protocol/redis.ts';

/** `sealed` with the bytes of its base64 field `field` changed by `change`. */
function altered(
  sealed: SealedSecrets,
  field: keyof SealedSecrets,
  change: (bytes: Buffer) => Buffer,
): SealedSecrets {
  return { ...sealed, [field]: change(Buffer.from(sealed[field], 'base64')).toString('base64') };
}

describe('sealed secret values', () => {
  it('open with the key they were sealed for, and with no other', () => {
    const keys = new SecretKeyPair();
    const sealed = sealSecrets(keys.publicKey, ['first-secret-value', 'second-secret-value']);
    expect(JSON.stringify(sealed)).not.toContain('secret-value');
    expect(keys.openValues(sealed)).toEqual({ values: ['first-secret-value', 'second-secret-value'] });
    expect(new SecretKeyPair().openValues(sealed)).toEqual({ refused: 'not_for_this_key' });
  });

  it('open to nothing once altered', () => {
    const keys = new SecretKeyPair();
    const sealed = sealSecrets(keys.publicKey, ['first-secret-value']);
    const flip = (bytes: Buffer): Buffer => {
      bytes[0] = (bytes[0] ?? 0) ^ 1;
      return bytes;
    };
    expect(keys.openValues(altered(sealed, 'data', flip))).toEqual({ refused: 'not_for_this_key' });
    expect(keys.openValues(altered(sealed, 'tag', flip))).toEqual({ refused: 'not_for_this_key' });
    expect(keys.openValues(altered(sealed, 'iv', flip))).toEqual({ refused: 'not_for_this_key' });
    // Another curve's key, and an X25519 point of small order (no shared secret).
    const ecKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      .publicKey.export({ format: 'der', type: 'spki' })
      .toString('base64');
    expect(keys.openValues({ ...sealed, key: ecKey })).toEqual({ refused: 'malformed' });
    const zeroPoint = altered(sealed, 'key', (bytes) =>
      Buffer.concat([bytes.subarray(0, 12), Buffer.alloc(32)]),
    );
    expect(keys.openValues(zeroPoint)).toEqual({ refused: 'not_for_this_key' });
    // The original still opens: refusals do not count as opened.
    expect(keys.openValues(sealed)).toEqual({ values: ['first-secret-value'] });
  });

  it('are refused when not shaped as a worker seals them, without throwing', () => {
    const keys = new SecretKeyPair();
    const sealed = sealSecrets(keys.publicKey, ['first-secret-value']);
    for (const bad of [
      undefined,
      null,
      'sealed',
      42,
      [],
      {},
      { ...sealed, key: 'not a key' },
      { ...sealed, iv: 7 },
      { ...sealed, data: undefined },
      { ...sealed, tag: { toString: () => 'x' } },
      // A short tag would let a forger guess it (GCM accepts 4 bytes unless told otherwise).
      altered(sealed, 'tag', (bytes) => bytes.subarray(0, 4)),
      altered(sealed, 'iv', (bytes) => Buffer.concat([bytes, bytes])),
      { ...sealed, data: `${sealed.data}!` },
    ]) {
      expect(keys.openValues(bad)).toEqual({ refused: 'malformed' });
    }
    // Sealed properly, but not a list of strings inside.
    expect(keys.openValues(sealSecrets(keys.publicKey, [1, 2] as unknown as string[]))).toEqual({
      refused: 'malformed',
    });
  });

  it('are refused past what a worker sends in one signal', () => {
    const keys = new SecretKeyPair();
    const many = Array.from({ length: SECRETS_PER_SIGNAL + 1 }, (_, i) => `secret-value-${i}`);
    expect(keys.openValues(sealSecrets(keys.publicKey, many))).toEqual({ refused: 'oversize' });
    const long = 'k'.repeat(MAX_FORWARDED_SECRET_CHARS + 1);
    expect(keys.openValues(sealSecrets(keys.publicKey, [long]))).toEqual({ refused: 'oversize' });
    // The most a worker sends (every character escaped in the JSON) fits; a bigger payload is not
    // decrypted at all.
    const most = Array.from({ length: SECRETS_PER_SIGNAL }, () =>
      '\u0001'.repeat(MAX_FORWARDED_SECRET_CHARS),
    );
    const largest = sealSecrets(keys.publicKey, most);
    expect(largest.data.length).toBeLessThanOrEqual(MAX_SEALED_SECRETS_CHARS);
    expect(keys.openValues(largest)).toEqual({ values: most });
    const huge = { ...largest, data: 'A'.repeat(MAX_SEALED_SECRETS_CHARS + 4) };
    expect(keys.openValues(huge)).toEqual({ refused: 'oversize' });
    expect(() => sealSecrets('not a key', ['secret-value'])).toThrow();
  });

  it('are refused when replayed', () => {
    const keys = new SecretKeyPair();
    const sealed = sealSecrets(keys.publicKey, ['first-secret-value']);
    expect(keys.openValues(sealed)).toEqual({ values: ['first-secret-value'] });
    expect(keys.openValues({ ...sealed })).toEqual({ refused: 'replayed' });
    // A new seal of the same values is not a replay (each has its own ephemeral key).
    expect(keys.openValues(sealSecrets(keys.publicKey, ['first-secret-value']))).toEqual({
      values: ['first-secret-value'],
    });
  });
});
