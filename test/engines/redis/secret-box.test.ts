/**
 * The seal on credentials a worker sends its supervisor through Redis: only the supervisor's key
 * opens it, an altered one opens to nothing, and a supervisor takes no more than a worker sends.
 */
import { describe, expect, it } from 'vitest';
import { MAX_FORWARDED_SECRET_CHARS, SECRETS_PER_SIGNAL } from '../../../src/engines/redis/constants.ts';
import { SecretKeyPair, sealSecrets } from '../../../src/engines/redis/secret-box.ts';

describe('sealed secret values', () => {
  it('open with the key they were sealed for, and with no other', () => {
    const keys = new SecretKeyPair();
    const sealed = sealSecrets(keys.publicKey, ['first-secret-value', 'second-secret-value']);
    expect(JSON.stringify(sealed)).not.toContain('secret-value');
    expect(keys.openValues(sealed)).toEqual(['first-secret-value', 'second-secret-value']);
    expect(new SecretKeyPair().openValues(sealed)).toBeUndefined();
  });

  it('open to nothing once altered', () => {
    const keys = new SecretKeyPair();
    const sealed = sealSecrets(keys.publicKey, ['first-secret-value']);
    const data = Buffer.from(sealed.data, 'base64');
    data[0] = (data[0] ?? 0) ^ 1;
    expect(keys.openValues({ ...sealed, data: data.toString('base64') })).toBeUndefined();
    expect(keys.openValues({ ...sealed, key: 'not a key' })).toBeUndefined();
  });

  it('are refused past what a worker sends in one signal', () => {
    const keys = new SecretKeyPair();
    const many = Array.from({ length: SECRETS_PER_SIGNAL + 1 }, (_, i) => `secret-value-${i}`);
    expect(keys.openValues(sealSecrets(keys.publicKey, many))).toBeUndefined();
    const long = 'k'.repeat(MAX_FORWARDED_SECRET_CHARS + 1);
    expect(keys.openValues(sealSecrets(keys.publicKey, [long]))).toBeUndefined();
    expect(() => sealSecrets('not a key', ['secret-value'])).toThrow();
  });
});
