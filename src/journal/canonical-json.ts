/**
 * Canonical JSON: one byte-exact text per value, so a hash of it means the same thing to every
 * writer and verifier. Object keys are sorted by UTF-16 code units (not JavaScript's property
 * order, which puts integer-like keys first and would surprise a verifier written in another
 * language); no whitespace; otherwise exactly `JSON.stringify` (undefined object members dropped,
 * undefined array items and non-finite numbers as `null`, `toJSON` honoured).
 *
 * Every journal event passes through here on the agent's thread, so the writer builds the text in
 * one pass (masking secrets on the way when asked) rather than copying the value first.
 */
import { hash } from 'node:crypto';
import { SystemError } from '../errors.ts';
import { MAX_JSON_DEPTH } from './constants.ts';

/** How strings are masked while writing (the journal's redaction). */
export interface Masking {
  /** The text stored for a string value; `secret` when it sits under a secret key. */
  readonly text: (value: string, secret: boolean) => string;
  /** Whether a member named `key` holds a secret (checked only inside `keyedMembers`). */
  readonly isSecretKey: (key: string) => boolean;
  /** Top-level members whose nested keys are checked with `isSecretKey`. */
  readonly keyedMembers: ReadonlySet<string>;
  /** Top-level members written unmasked. */
  readonly plainMembers: ReadonlySet<string>;
}

/**
 * The canonical JSON text of `value`, with strings masked by `masking` when given. Throws
 * `SystemError('journal_unserializable')` on a cycle or a bigint.
 */
export function canonicalJson(value: unknown, masking?: Masking): string {
  const writer = new Writer(masking);
  const out = masking ? writer.topLevel(value) : writer.write(value, false, false);
  return out ?? 'null';
}

/** SHA-256 of a UTF-8 string, lowercase hex. */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/** SHA-256 (hex) of the canonical JSON of `value`: e.g. a definition hash for the Started event. */
export function hashValue(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/** Keys as JSON text: events repeat the same few dozen member names. */
const quotedKeys = new Map<string, string>();
const QUOTED_KEYS_LIMIT = 4096;

function quoteKey(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = JSON.stringify(key);
    if (quotedKeys.size < QUOTED_KEYS_LIMIT) quotedKeys.set(key, quoted);
  }
  return quoted;
}

let plainWriter: Writer | undefined;

/** A writer without masking, shared: `write` leaves no state behind. */
function unmasked(): Writer {
  plainWriter ??= new Writer(undefined);
  return plainWriter;
}

class Writer {
  readonly #masking: Masking | undefined;
  /** Objects being written: a value met again inside itself is a cycle. A set, so that checking
   * costs O(1) at any depth (an array scan made deep values quadratic). */
  readonly #path = new Set<object>();

  constructor(masking: Masking | undefined) {
    this.#masking = masking;
  }

  /** An event body: its members are masked by `keyedMembers` and `plainMembers`. */
  topLevel(value: unknown): string | undefined {
    const masking = this.#masking;
    if (masking === undefined || typeof value !== 'object' || value === null || Array.isArray(value))
      return this.write(value, false, false);
    const object = this.#enter(value);
    try {
      const record = object as Record<string, unknown>;
      let out = '';
      for (const key of Object.keys(record).sort()) {
        const member = masking.plainMembers.has(key)
          ? unmasked().write(record[key], false, false)
          : this.write(record[key], masking.keyedMembers.has(key), false);
        if (member !== undefined) out += `${out === '' ? '' : ','}${quoteKey(key)}:${member}`;
      }
      return `{${out}}`;
    } finally {
      this.#path.delete(object);
    }
  }

  write(value: unknown, byKey: boolean, secret: boolean): string | undefined {
    if (value === null) return 'null';
    switch (typeof value) {
      case 'string':
        return JSON.stringify(this.#masking ? this.#masking.text(value, secret) : value);
      case 'number':
        return Number.isFinite(value) ? JSON.stringify(value) : 'null';
      case 'boolean':
        return value ? 'true' : 'false';
      case 'undefined':
      case 'function':
      case 'symbol':
        return undefined;
      case 'bigint':
        throw new SystemError('journal_unserializable', 'Expected JSON data, got a bigint');
    }
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return this.write(toJSON.call(value), byKey, secret);
    const object = this.#enter(value as object);
    try {
      if (Array.isArray(object)) {
        let out = '';
        for (let i = 0; i < object.length; i += 1) {
          out += `${i === 0 ? '' : ','}${this.write(object[i], byKey, secret) ?? 'null'}`;
        }
        return `[${out}]`;
      }
      const record = object as Record<string, unknown>;
      const masking = this.#masking;
      let out = '';
      for (const key of Object.keys(record).sort()) {
        const secretMember = secret || (byKey && masking?.isSecretKey(key) === true);
        const member = this.write(record[key], byKey, secretMember);
        if (member !== undefined) out += `${out === '' ? '' : ','}${quoteKey(key)}:${member}`;
      }
      return `{${out}}`;
    } finally {
      this.#path.delete(object);
    }
  }

  #enter(object: object): object {
    if (this.#path.has(object)) {
      throw new SystemError('journal_unserializable', 'Expected JSON data, got a value that contains itself');
    }
    if (this.#path.size >= MAX_JSON_DEPTH) {
      this.#path.clear();
      throw new SystemError(
        'journal_unserializable',
        `Expected JSON data nested at most ${MAX_JSON_DEPTH} levels deep, got deeper nesting`,
        { maxDepth: MAX_JSON_DEPTH },
      );
    }
    this.#path.add(object);
    return object;
  }
}
