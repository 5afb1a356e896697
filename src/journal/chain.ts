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
  const ts = input.ts ?? (now ? now().toISOString() : isoNow());
  // Sorted by key, as canonical JSON writes them.
  const canonical = canonicalEventJson(input, JOURNAL_MASKING, [
    ['prev', JSON.stringify(head.lastHash)],
    ['seq', String(head.nextSeq)],
    ['ts', JSON.stringify(ts)],
  ]);
  const hash = sha256Hex(canonical);
  return { line: withHash(canonical, hash), head: { nextSeq: head.nextSeq + 1, lastHash: hash } };
}

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
let clockIso = '';

/** The current time as ISO 8601, formatted once per millisecond (many events share one). */
function isoNow(): string {
  const ms = Date.now();
  if (ms !== clockMs) {
    clockMs = ms;
    clockIso = new Date(ms).toISOString();
  }
  return clockIso;
}

/**
 * The stored line: the hashed canonical text with `hash` appended last (member order does not
 * matter to a reader), so each event is serialized once.
 */
function withHash(canonical: string, hash: string): string {
  return `${canonical.slice(0, -1)},"hash":"${hash}"}`;
}

/** The exact line (no newline) a journal stores for `event`. */
export function storedLine(event: AuditEvent): string {
  const { hash, ...rest } = event;
  return withHash(canonicalJson(rest), hash);
}
