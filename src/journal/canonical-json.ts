/**
 * Canonical JSON: one byte-exact text per value, so a hash of it means the same thing to every
 * writer and verifier. Object keys are sorted by UTF-16 code units (not JavaScript's property
 * order, which puts integer-like keys first and would surprise a verifier written in another
 * language); no whitespace; otherwise exactly `JSON.stringify` (undefined object members dropped,
 * undefined array items and non-finite numbers as `null`, `toJSON` honoured).
 */
import { createHash } from 'node:crypto';
import { SystemError } from '../errors.ts';

/** The canonical JSON text of `value`. Throws `SystemError('journal_unserializable')` on a cycle or a bigint. */
export function canonicalJson(value: unknown): string {
  const out = write(value, new Set());
  if (out === undefined) return 'null';
  return out;
}

/** SHA-256 of a UTF-8 string, lowercase hex. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** SHA-256 (hex) of the canonical JSON of `value`: e.g. a definition hash for the Started event. */
export function hashValue(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

function write(value: unknown, seen: Set<object>): string | undefined {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
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
  const object = value as object;
  const toJSON = (object as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return write(toJSON.call(object), seen);
  if (seen.has(object)) {
    throw new SystemError('journal_unserializable', 'Expected JSON data, got a value that contains itself');
  }
  seen.add(object);
  try {
    if (Array.isArray(object)) {
      return `[${object.map((item: unknown) => write(item, seen) ?? 'null').join(',')}]`;
    }
    const record = object as Record<string, unknown>;
    const members: string[] = [];
    for (const key of Object.keys(record).sort()) {
      const member = write(record[key], seen);
      if (member !== undefined) members.push(`${JSON.stringify(key)}:${member}`);
    }
    return `{${members.join(',')}}`;
  } finally {
    seen.delete(object);
  }
}
