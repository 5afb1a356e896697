/**
 * The hash chain: how an event body becomes a journalled event. Shared by every sink, so a file
 * journal, an in-memory one and a future Redis stream produce identical events for identical input.
 */
import { canonicalEventJson, canonicalJson, sha256Hex } from './canonical-json.ts';
import { GENESIS_HASH } from './constants.ts';
import type { AuditEvent, AuditEventInput } from './events.ts';
import { JOURNAL_MASKING } from './redact.ts';

/** Where a chain stands: the next `seq` and the `hash` the next event must point back to. */
export interface ChainHead {
  readonly nextSeq: number;
  readonly lastHash: string;
}

/** The head of an empty journal. */
export const EMPTY_HEAD: ChainHead = { nextSeq: 0, lastHash: GENESIS_HASH };

/** The head after `event`. */
export function headAfter(event: AuditEvent): ChainHead {
  return { nextSeq: event.seq + 1, lastHash: event.hash };
}

/** SHA-256 (hex) of the canonical JSON of `event` without its `hash` member. */
export function eventHash(event: AuditEvent): string {
  const { hash: _ignored, ...rest } = event;
  return sha256Hex(canonicalJson(rest));
}

/**
 * Turns a body into the exact line (no newline) to store as the next event of the chain: secrets
 * are masked, `seq`, `ts` (from `now`, or the system clock when undefined), `prev` and `hash`
 * assigned. Returns the line and the head after it.
 * The body is serialized once and never parsed back: this runs for every event an agent writes.
 */
export function chainLine(
  input: AuditEventInput,
  head: ChainHead,
  now: (() => Date) | undefined,
): { readonly line: string; readonly head: ChainHead } {
  const { canonical, head: after } = chainCanonical(input, head, now);
  return { line: withHash(canonical, after.lastHash), head: after };
}

/**
 * {@link chainLine} in parts, for a writer that encodes the line itself: the hashed canonical text
 * (flat: hashing flattened it) and the head after it, whose `lastHash` is the event's `hash`. The
 * stored line is `canonical` without its closing brace, then `,"hash":"<hash>"}`.
 */
export function chainCanonical(
  input: AuditEventInput,
  head: ChainHead,
  now: (() => Date) | undefined,
): { readonly canonical: string; readonly head: ChainHead } {
  const given = input.ts;
  const tsJson =
    given !== undefined && given !== null
      ? JSON.stringify(given)
      : now
        ? JSON.stringify(now().toISOString())
        : isoNowJson();
  // Sorted by key, as canonical JSON writes them. One array reused, unless a body's `toJSON`
  // chains another event while this one is being written.
  const prev = JSON.stringify(head.lastHash);
  const seq = String(head.nextSeq);
  let canonical: string;
  if (chaining) {
    canonical = canonicalEventJson(input, JOURNAL_MASKING, [
      ['prev', prev],
      ['seq', seq],
      ['ts', tsJson],
    ]);
  } else {
    const members = CHAIN_FIELDS;
    (members[0] as [string, string])[1] = prev;
    (members[1] as [string, string])[1] = seq;
    (members[2] as [string, string])[1] = tsJson;
    chaining = true;
    try {
      canonical = canonicalEventJson(input, JOURNAL_MASKING, members);
    } finally {
      chaining = false;
    }
  }
  return { canonical, head: { nextSeq: head.nextSeq + 1, lastHash: sha256Hex(canonical) } };
}

/** True while an event is being serialized with {@link CHAIN_FIELDS}. */
let chaining = false;

/** The chain fields' JSON text, filled in for each event (prev, seq, ts: sorted by key). */
const CHAIN_FIELDS: readonly (readonly [string, string])[] = [
  ['prev', ''],
  ['seq', ''],
  ['ts', ''],
];

/**
 * {@link chainLine}, with the event as stored: parsed back from the line, so it equals what a reader
 * will later see (secrets masked, undefined members gone, plain data only).
 */
export function chainEvent(
  input: AuditEventInput,
  head: ChainHead,
  now: (() => Date) | undefined,
): { readonly event: AuditEvent; readonly line: string; readonly head: ChainHead } {
  const chained = chainLine(input, head, now);
  return { event: JSON.parse(chained.line) as AuditEvent, ...chained };
}

let clockMs = Number.NaN;
let clockJson = '';

/** The current time as quoted ISO 8601, formatted once per millisecond (many events share one). */
function isoNowJson(): string {
  const ms = Date.now();
  if (ms !== clockMs) {
    clockMs = ms;
    clockJson = `"${new Date(ms).toISOString()}"`;
  }
  return clockJson;
}

/** What replaces the canonical text's closing brace in a stored line, before the hash. */
export const HASH_MEMBER_OPEN = ',"hash":"';
/** What follows the hash in a stored line. */
export const HASH_MEMBER_CLOSE = '"}';

/**
 * The stored line: the hashed canonical text with `hash` appended last (member order does not
 * matter to a reader), so each event is serialized once.
 */
export function withHash(canonical: string, hash: string): string {
  return `${canonical.slice(0, -1)}${HASH_MEMBER_OPEN}${hash}${HASH_MEMBER_CLOSE}`;
}

/** The exact line (no newline) a journal stores for `event`. */
export function storedLine(event: AuditEvent): string {
  const { hash, ...rest } = event;
  return withHash(canonicalJson(rest), hash);
}
