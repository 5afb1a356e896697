/**
 * Credentials a worker registered for masking travel to the supervisor through Redis (its signal
 * stream), where anyone who reads the server, its AOF or a backup would read them. They are sealed
 * for the one process that needs them: the supervisor makes an X25519 key pair when it starts and
 * gives its public key in every job (`AgentJobData.secretsKey`); a worker seals each batch of
 * values with an ephemeral X25519 key, HKDF-SHA-256 and AES-256-GCM (ECIES). The private key never
 * leaves the supervisor's memory. node:crypto only.
 */
import {
  createCipheriv,
  createDecipheriv,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import type { SealedSecrets } from '../../protocol/redis.ts';
import { MAX_FORWARDED_SECRET_CHARS, SECRETS_PER_SIGNAL } from './constants.ts';

const INFO = Buffer.from('troupe secret values v1');

function aesKey(privateKey: KeyObject, publicKey: KeyObject): Buffer {
  const shared = diffieHellman({ privateKey, publicKey });
  return Buffer.from(hkdfSync('sha256', shared, Buffer.alloc(0), INFO, 32));
}

function publicKeyOf(base64: string): KeyObject {
  return createPublicKey({ key: Buffer.from(base64, 'base64'), format: 'der', type: 'spki' });
}

/** Seals `values` for the holder of the private key of `publicKey` (base64 SPKI DER). */
export function sealSecrets(publicKey: string, values: readonly string[]): SealedSecrets {
  const ephemeral = generateKeyPairSync('x25519');
  const key = aesKey(ephemeral.privateKey, publicKeyOf(publicKey));
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(values), 'utf8'), cipher.final()]);
  return {
    key: ephemeral.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    iv: iv.toString('base64'),
    data: data.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  };
}

/** The supervisor's key pair: the public key goes in jobs, the private one opens what workers seal. */
export class SecretKeyPair {
  /** base64 SPKI DER. */
  readonly publicKey: string;
  readonly #privateKey: KeyObject;

  constructor() {
    const pair = generateKeyPairSync('x25519');
    this.publicKey = pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    this.#privateKey = pair.privateKey;
  }

  /**
   * The values of a `secrets` signal, or undefined when it was not sealed for this key, was
   * altered, or does not hold what a worker sends (at most SECRETS_PER_SIGNAL strings of at most
   * MAX_FORWARDED_SECRET_CHARS characters).
   */
  openValues(sealed: SealedSecrets): string[] | undefined {
    const values = this.open(sealed);
    if (!Array.isArray(values) || values.length > SECRETS_PER_SIGNAL) return undefined;
    const strings = values.filter(
      (value): value is string => typeof value === 'string' && value.length <= MAX_FORWARDED_SECRET_CHARS,
    );
    return strings.length === values.length ? strings : undefined;
  }

  /** What `sealed` holds, or undefined when it was not sealed for this key or was altered. */
  open(sealed: SealedSecrets): unknown {
    try {
      const key = aesKey(this.#privateKey, publicKeyOf(sealed.key));
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
      decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
      const text = Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]);
      return JSON.parse(text.toString('utf8')) as unknown;
    } catch {
      return undefined;
    }
  }
}
