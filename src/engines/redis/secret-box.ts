/**
 * Credentials a worker registered for masking travel to the supervisor through Redis (its signal
 * stream), where anyone who reads the server, its AOF or a backup would read them. They are sealed
 * for the one process that needs them: the supervisor makes an X25519 key pair when it starts and
 * gives its public key in every job (`AgentJobData.secretsKey`); a worker seals each batch of
 * values with an ephemeral X25519 key, HKDF-SHA-256 and AES-256-GCM (ECIES). The private key never
 * leaves the supervisor's memory. node:crypto only.
 *
 * The seal hides the values; it does not say who sent them. The public key is in every job, so
 * whoever can write to Redis can seal values for a supervisor (making it mask strings it need not),
 * as it could forge an agent's outcome. What a supervisor will not do is crash, or open more than
 * a worker sends: a signal that is not well formed, too big, not sealed for its key (or altered),
 * or seen before is refused with a {@link SecretsRefusal}.
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
import {
  MAX_FORWARDED_SECRET_CHARS,
  MAX_OPENED_SEALS,
  MAX_SEALED_SECRETS_CHARS,
  SECRETS_PER_SIGNAL,
} from './constants.ts';

const INFO = Buffer.from('troupe secret values v1');
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** base64 of an X25519 public key as SPKI DER (44 bytes). */
const PUBLIC_KEY_CHARS = 60;

/**
 * Why a supervisor refused a `secrets` signal: `malformed` (not four base64 fields of the sizes a
 * worker sends, or not a JSON array of strings inside), `oversize` (a ciphertext past
 * MAX_SEALED_SECRETS_CHARS, more than SECRETS_PER_SIGNAL values, or one longer than
 * MAX_FORWARDED_SECRET_CHARS), `not_for_this_key` (sealed for another supervisor, with a key that is
 * not X25519, or altered), `replayed` (a seal this supervisor opened already).
 */
export type SecretsRefusal = 'malformed' | 'oversize' | 'not_for_this_key' | 'replayed';

/** What {@link SecretKeyPair.openValues} made of a signal. */
export type OpenedSecrets = { readonly values: string[] } | { readonly refused: SecretsRefusal };

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
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  const data = Buffer.concat([cipher.update(JSON.stringify(values), 'utf8'), cipher.final()]);
  return {
    key: ephemeral.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    iv: iv.toString('base64'),
    data: data.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** `sealed` as a worker sends it (strings of the right sizes), or why not. */
function checkShape(sealed: unknown): SealedSecrets | SecretsRefusal {
  if (typeof sealed !== 'object' || sealed === null) return 'malformed';
  const { key, iv, data, tag } = sealed as Record<string, unknown>;
  if (
    typeof key !== 'string' ||
    typeof iv !== 'string' ||
    typeof data !== 'string' ||
    typeof tag !== 'string'
  ) {
    return 'malformed';
  }
  if (data.length > MAX_SEALED_SECRETS_CHARS) return 'oversize';
  const sized = (text: string, bytes: number): boolean =>
    BASE64.test(text) && Buffer.byteLength(text, 'base64') === bytes;
  if (key.length !== PUBLIC_KEY_CHARS || !BASE64.test(key)) return 'malformed';
  if (!sized(iv, IV_BYTES) || !sized(tag, TAG_BYTES) || !BASE64.test(data)) return 'malformed';
  return { key, iv, data, tag };
}

/** The supervisor's key pair: the public key goes in jobs, the private one opens what workers seal. */
export class SecretKeyPair {
  /** base64 SPKI DER. */
  readonly publicKey: string;
  readonly #privateKey: KeyObject;
  /** The ephemeral keys of the seals opened, oldest first (at most MAX_OPENED_SEALS). */
  readonly #opened = new Set<string>();

  constructor() {
    const pair = generateKeyPairSync('x25519');
    this.publicKey = pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    this.#privateKey = pair.privateKey;
  }

  /**
   * The values of a `secrets` signal (at most SECRETS_PER_SIGNAL strings of at most
   * MAX_FORWARDED_SECRET_CHARS characters), or why it is refused. Never throws, whatever `sealed`
   * holds (it comes from Redis).
   */
  openValues(sealed: unknown): OpenedSecrets {
    const checked = checkShape(sealed);
    if (typeof checked === 'string') return { refused: checked };
    if (this.#opened.has(checked.key)) return { refused: 'replayed' };
    const text = this.#open(checked);
    if (text === undefined) return { refused: 'not_for_this_key' };
    this.#opened.add(checked.key);
    if (this.#opened.size > MAX_OPENED_SEALS) {
      const oldest = this.#opened.values().next();
      if (oldest.done !== true) this.#opened.delete(oldest.value);
    }
    let values: unknown;
    try {
      values = JSON.parse(text);
    } catch {
      return { refused: 'malformed' };
    }
    if (!Array.isArray(values) || values.some((value) => typeof value !== 'string')) {
      return { refused: 'malformed' };
    }
    const strings = values as string[];
    if (
      strings.length > SECRETS_PER_SIGNAL ||
      strings.some((value) => value.length > MAX_FORWARDED_SECRET_CHARS)
    ) {
      return { refused: 'oversize' };
    }
    return { values: strings };
  }

  /** The plaintext of `sealed`, or undefined when it was not sealed for this key or was altered. */
  #open(sealed: SealedSecrets): string | undefined {
    try {
      const key = aesKey(this.#privateKey, publicKeyOf(sealed.key));
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
      const text = Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]);
      return text.toString('utf8');
    } catch {
      return undefined;
    }
  }
}
