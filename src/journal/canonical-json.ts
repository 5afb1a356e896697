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
  /**
   * The text stored for a string value; `secret` when it sits under a secret key. A function of
   * its arguments only: long texts' results are reused (see {@link quotedLongText}).
   */
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
  const writer = takeWriter(masking);
  try {
    return (masking ? writer.topLevel(value, []) : writer.write(value, false, false)) ?? 'null';
  } finally {
    giveBack(writer);
  }
}

/**
 * {@link canonicalJson} of an event body (an object) masked by `masking`, with `members` (sorted by
 * key, values already JSON text) written in their place among the body's members and replacing the
 * body's members of the same name: the body plus its chain fields, without copying the body into
 * a new object first (this runs for every event an agent writes).
 */
export function canonicalEventJson(
  body: object,
  masking: Masking,
  members: readonly (readonly [key: string, json: string])[],
): string {
  const writer = takeWriter(masking);
  try {
    return writer.topLevel(body, members) ?? 'null';
  } finally {
    giveBack(writer);
  }
}

/** SHA-256 of a UTF-8 string, lowercase hex. */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/** SHA-256 (hex) of the canonical JSON of `value`: e.g. a definition hash for the Started event. */
export function hashValue(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/**
 * Long texts (at least LONG_TEXT_CHARS), masked and quoted, by masking: every agent's Started
 * event repeats its definition's text and its system prompt (the same string objects, so a lookup
 * is a pointer comparison), and masking and quoting them again was ~60 % of that event's cost.
 */
let longTexts = new WeakMap<Masking, Map<string, string>>();
const LONG_TEXT_CHARS = 256;
const LONG_TEXTS_LIMIT = 512;

/** Drops every masked long text kept: what masking does changed (a credential was registered). */
export function forgetMaskedTexts(): void {
  longTexts = new WeakMap();
}

function quotedLongText(masking: Masking, text: string): string {
  let known = longTexts.get(masking);
  if (known === undefined) {
    known = new Map();
    longTexts.set(masking, known);
  }
  let quoted = known.get(text);
  if (quoted === undefined) {
    quoted = JSON.stringify(masking.text(text, false));
    if (known.size >= LONG_TEXTS_LIMIT) known.clear();
    known.set(text, quoted);
  }
  return quoted;
}

/**
 * Member prefixes as JSON text, `"key":` for the first member of an object and `,"key":` for the
 * others: events repeat the same few dozen member names, and building the prefix from its pieces
 * allocated two or three strings per member.
 */
const firstPrefixes = new Map<string, string>();
const nextPrefixes = new Map<string, string>();
const PREFIXES_LIMIT = 4096;

function memberPrefix(key: string, first: boolean): string {
  const known = first ? firstPrefixes : nextPrefixes;
  let prefix = known.get(key);
  if (prefix === undefined) {
    prefix = `${first ? '' : ','}${JSON.stringify(key)}:`;
    if (known.size < PREFIXES_LIMIT) known.set(key, prefix);
  }
  return prefix;
}

/**
 * The keys of `record` in code-unit order. Event members are a handful of keys: sorting them in
 * place by insertion allocates nothing, where `Array.prototype.sort` copied every array it sorted
 * (the largest allocation of a journal append).
 */
function sortedKeys(record: object): string[] {
  const keys = Object.keys(record);
  if (keys.length > SMALL_SORT) return keys.sort();
  for (let i = 1; i < keys.length; i += 1) {
    const key = keys[i] as string;
    let j = i - 1;
    for (; j >= 0 && (keys[j] as string) > key; j -= 1) keys[j + 1] = keys[j] as string;
    keys[j + 1] = key;
  }
  return keys;
}
const SMALL_SORT = 24;

/**
 * What JSON.stringify escapes in a string: quotes, backslashes, control characters and lone
 * surrogates (any surrogate here: a text with a pair takes the slow path, as exact).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: JSON.stringify escapes exactly these.
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** Pieces kept between values: more are let go (a huge value's array is not kept). */
const MAX_KEPT_PARTS = 65_536;

/**
 * Slots the pieces' array keeps past a text's last piece (beyond twice its count) before it is cut
 * to that text's length: `join` reads every slot, so a long array behind short texts costs a little
 * each time, and cutting it costs a new backing store the next time it grows.
 */
const SPARE_PARTS = 128;

/** Texts longer than this do not leave their pieces in the kept array (they may be large strings). */
const RELEASED_TEXT_CHARS = 65_536;

/** One writer kept between calls (calls do not nest, but a `toJSON` may serialize again). */
let spareWriter: Writer | undefined;

function takeWriter(masking: Masking | undefined): Writer {
  const writer = spareWriter;
  if (writer === undefined) return new Writer(masking);
  spareWriter = undefined;
  writer.reset(masking);
  return writer;
}

function giveBack(writer: Writer): void {
  writer.reset(undefined);
  spareWriter = writer;
}

class Writer {
  #masking: Masking | undefined;
  /**
   * Objects being written, outermost first. A cycle is only looked for once this reaches
   * MAX_JSON_DEPTH (a value that contains itself nests without end): a push and a pop per object,
   * where a set's add, has and delete per object were ~1 % of an actor host's CPU.
   */
  readonly #path: object[] = [];
  /**
   * The text being written, in pieces joined once at the end: concatenating them one by one made
   * a rope node per piece (two or three per member) and hashing then flattened the rope into one
   * more copy; a join builds the flat text directly. The pieces are `#parts[0, #count)`. The array
   * is reused from text to text without being emptied: setting an array's length to 0 gives its
   * backing store up, and growing it again for every event (three or four copies of ~60 slots)
   * was most of what a journal append allocated (bench/RESULTS.md, lead session 9). So slots past
   * `#count` are blanked instead, and `join` skips them.
   */
  #parts: string[] = [];
  #count = 0;
  /** Slots below this may hold pieces of an earlier text, or of a member taken back. */
  #used = 0;

  constructor(masking: Masking | undefined) {
    this.#masking = masking;
  }

  /** Ready for another value (after an error too: the path may hold what was being written). */
  reset(masking: Masking | undefined): void {
    this.#masking = masking;
    // Emptied only when not empty: setting the length, even to the same 0, drops the backing store.
    if (this.#path.length !== 0) this.#path.length = 0;
    this.#backTo(0);
    if (this.#parts.length > MAX_KEPT_PARTS) {
      this.#parts = [];
      this.#used = 0;
    }
  }

  #add(piece: string): void {
    this.#parts[this.#count++] = piece;
  }

  /** Takes back the pieces from `mark` on (a member JSON leaves out, or what an error left). */
  #backTo(mark: number): void {
    if (this.#count > this.#used) this.#used = this.#count;
    this.#count = mark;
  }

  /**
   * Adds `text` as a JSON string: the text itself between quotes when nothing in it needs
   * escaping (the join copies it once), which is what JSON.stringify would write, without its copy.
   */
  #addQuoted(text: string): void {
    if (NEEDS_ESCAPE.test(text)) this.#add(JSON.stringify(text));
    else {
      this.#add('"');
      this.#add(text);
      this.#add('"');
    }
  }

  /**
   * An event body: its members are masked by `keyedMembers` (and written unmasked for
   * `plainMembers`); `extra` members (sorted, JSON text) are merged in and replace the body's
   * members of the same name.
   */
  topLevel(value: unknown, extra: readonly (readonly [string, string])[]): string | undefined {
    const masking = this.#masking;
    if (masking === undefined || typeof value !== 'object' || value === null || Array.isArray(value))
      return this.write(value, false, false);
    const record = this.#enter(value) as Record<string, unknown>;
    this.#add('{');
    let first = true;
    let next = 0;
    for (const key of sortedKeys(record)) {
      // Bounded by the length, not by reading past the end: an out-of-bounds read deopted this.
      while (next < extra.length) {
        const added = extra[next];
        if (added === undefined || added[0] > key) break;
        this.#add(memberPrefix(added[0], first));
        this.#add(added[1]);
        first = false;
        next += 1;
      }
      if (next > 0 && extra[next - 1]?.[0] === key) continue;
      const mark = this.#count;
      this.#add(memberPrefix(key, first));
      const wrote = masking.plainMembers.has(key)
        ? this.#putUnmasked(record[key])
        : this.#put(record[key], masking.keyedMembers.has(key), false);
      if (wrote) first = false;
      else this.#backTo(mark);
    }
    for (; next < extra.length; next += 1) {
      const added = extra[next];
      if (added === undefined) continue;
      this.#add(memberPrefix(added[0], first));
      this.#add(added[1]);
      first = false;
    }
    this.#add('}');
    this.#path.pop();
    return this.#take();
  }

  /** The JSON text of `value`; undefined for what JSON leaves out. */
  write(value: unknown, byKey: boolean, secret: boolean): string | undefined {
    if (!this.#put(value, byKey, secret)) {
      this.#backTo(0);
      return undefined;
    }
    return this.#take();
  }

  /** The pieces written so far as one text; empties them. */
  #take(): string {
    const parts = this.#parts;
    const count = this.#count;
    this.#count = 0;
    if (count === 1) {
      // Slot 0 is never blanked: every later text writes it first.
      const only = parts[0] as string;
      if (only.length > RELEASED_TEXT_CHARS) parts[0] = '';
      return only;
    }
    if (parts.length > 2 * count + SPARE_PARTS) parts.length = count;
    else for (let i = count; i < this.#used; i += 1) parts[i] = '';
    this.#used = count;
    const text = parts.join('');
    if (text.length > RELEASED_TEXT_CHARS) {
      // The pieces of a long text (a large tool result) are not kept alive until the next one.
      for (let i = 0; i < count; i += 1) parts[i] = '';
      this.#used = 0;
    }
    return text;
  }

  #putUnmasked(value: unknown): boolean {
    const masking = this.#masking;
    this.#masking = undefined;
    try {
      return this.#put(value, false, false);
    } finally {
      this.#masking = masking;
    }
  }

  /** Adds the JSON text of `value` to the pieces; false (adding nothing) for what JSON leaves out. */
  #put(value: unknown, byKey: boolean, secret: boolean): boolean {
    if (value === null) {
      this.#add('null');
      return true;
    }
    switch (typeof value) {
      case 'string': {
        const masking = this.#masking;
        if (masking === undefined) this.#addQuoted(value);
        else if (value.length >= LONG_TEXT_CHARS && !secret) this.#add(quotedLongText(masking, value));
        else this.#addQuoted(masking.text(value, secret));
        return true;
      }
      case 'number':
        this.#add(Number.isFinite(value) ? JSON.stringify(value) : 'null');
        return true;
      case 'boolean':
        this.#add(value ? 'true' : 'false');
        return true;
      case 'undefined':
      case 'function':
      case 'symbol':
        return false;
      case 'bigint':
        throw new SystemError('journal_unserializable', 'Expected JSON data, got a bigint');
    }
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return this.#put(toJSON.call(value), byKey, secret);
    const object = this.#enter(value as object);
    // No try/finally: an error leaves the path as it was, and `reset` empties it.
    if (Array.isArray(object)) {
      this.#add('[');
      for (let i = 0; i < object.length; i += 1) {
        if (i > 0) this.#add(',');
        if (!this.#put(object[i], byKey, secret)) this.#add('null');
      }
      this.#add(']');
      this.#path.pop();
      return true;
    }
    const record = object as Record<string, unknown>;
    const masking = this.#masking;
    this.#add('{');
    let first = true;
    for (const key of sortedKeys(record)) {
      const secretMember = secret || (byKey && masking?.isSecretKey(key) === true);
      const mark = this.#count;
      this.#add(memberPrefix(key, first));
      if (this.#put(record[key], byKey, secretMember)) first = false;
      else this.#backTo(mark);
    }
    this.#add('}');
    this.#path.pop();
    return true;
  }

  #enter(object: object): object {
    const path = this.#path;
    if (path.length >= MAX_JSON_DEPTH) {
      const cyclic = path.includes(object);
      path.length = 0;
      if (cyclic) {
        throw new SystemError(
          'journal_unserializable',
          'Expected JSON data, got a value that contains itself',
        );
      }
      throw new SystemError(
        'journal_unserializable',
        `Expected JSON data nested at most ${MAX_JSON_DEPTH} levels deep, got deeper nesting`,
        { maxDepth: MAX_JSON_DEPTH },
      );
    }
    path.push(object);
    return object;
  }
}
