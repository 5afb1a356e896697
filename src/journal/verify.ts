/**
 * Checks that a journal is what its writer wrote: an unbroken hash chain, and (given a re-render)
 * that every provider input it claims to have sent is the one its own events reproduce.
 */
import type { ModelSettings } from '../providers/model-settings.ts';
import type { ToolSpec } from '../tools/types.ts';
import { eventHash } from './chain.ts';
import { GENESIS_HASH } from './constants.ts';
import { type AuditEvent, hashContinuation, hashInput, isTerminal } from './events.ts';
import { type JournalContents, type JournalProblem, readJournal } from './reader.ts';

/** One model request's input, as re-rendered from the journal. */
export interface RenderedInput {
  readonly system: string;
  /** The round's render (what its first request sent). */
  readonly input: string;
  readonly tools: readonly ToolSpec[];
  /**
   * For a later request of a round: the history entries the round added since its first request,
   * in order (see `hashContinuation`). Absent or empty for a round's first request.
   */
  readonly continuation?: readonly string[];
  /** The model settings the request was sent with (the Started event's `modelSettings`). */
  readonly modelSettings?: ModelSettings;
}

/**
 * Re-renders the provider input of the InferenceSubmitted event at `events[index]` from the events
 * before it. Called once per InferenceSubmitted, in increasing `index` order, always with the same
 * array, so an implementation may replay incrementally instead of from the start each time.
 */
export type Rerender = (events: readonly AuditEvent[], index: number) => RenderedInput;

/** Options of {@link verifyJournal}. */
export interface VerifyOptions {
  /** Without it only the chain is checked, not the InferenceSubmitted hashes. */
  readonly rerender?: Rerender;
  /**
   * `eventHash` of each event, in the same order, when the caller has them: the reader computes
   * them while it checks each line's bytes (`JournalContents.hashes`). Saves serializing every
   * event again. @default each event is hashed here
   */
  readonly contentHashes?: readonly string[];
}

/** Why {@link verifyJournal} stopped trusting a journal at `VerifyFailure.seq`. */
export type VerifyReason =
  /** The event with this seq is not there (a line was lost or could not be read). */
  | 'missing_event'
  /** The line holding this seq is not a well-formed event (see the reader's problems). */
  | 'damaged_line'
  /** An event claims a seq that was already seen (duplicated or reordered lines). */
  | 'bad_seq'
  /** The event's content does not hash to its `hash`: it was altered. */
  | 'bad_hash'
  /** The event's `prev` is not the previous event's hash: the chain was cut or spliced. */
  | 'broken_link'
  /** The first event is not Started, or a later one is. */
  | 'not_started'
  /** The event belongs to another agent than the Started event's. */
  | 'agent_mismatch'
  /** An event follows Completed or Failed. */
  | 'after_end'
  /** The re-rendered input of a model request does not hash to the recorded `inputHash`. */
  | 'input_mismatch'
  /** `rerender` threw for a model request. */
  | 'rerender_failed';

/** The first problem found. `seq` is the position where the journal stops being trustworthy. */
export interface VerifyFailure {
  readonly seq: number;
  readonly reason: VerifyReason;
  readonly message: string;
}

/** What {@link verifyJournal} found: `ok`, or the first bad event in `firstBad`. */
export interface VerifyResult {
  readonly ok: boolean;
  /** Events checked (all of them when `ok`). */
  readonly checkedEvents: number;
  /** InferenceSubmitted hashes (one per model request) compared with a re-render. */
  readonly checkedInferences: number;
  /** Set when not `ok`. */
  readonly firstBad?: VerifyFailure;
}

/**
 * Verifies `events` (as `readJournal` returns them) in order and stops at the first bad one. An
 * event is bad when it is not where its seq says, does not hash to its `hash`, does not point
 * back to its predecessor, belongs to another agent, follows the end, or (with `rerender`) is an
 * InferenceSubmitted whose `inputHash` differs from `hashInput` of the re-rendered input.
 */
export function verifyJournal(events: readonly AuditEvent[], options: VerifyOptions = {}): VerifyResult {
  let checkedInferences = 0;
  const fail = (index: number, reason: VerifyReason, message: string): VerifyResult => ({
    ok: false,
    checkedEvents: index,
    checkedInferences,
    firstBad: { seq: index, reason, message },
  });
  const first = events[0];
  if (first === undefined)
    return fail(0, 'missing_event', 'Expected a Started event at seq 0, found no events');

  let prevHash = GENESIS_HASH;
  let ended = false;
  for (const [index, event] of events.entries()) {
    if (event.seq > index)
      return fail(index, 'missing_event', `Expected seq ${index}, found seq ${event.seq}`);
    if (event.seq < index) {
      return fail(index, 'bad_seq', `Expected seq ${index}, found seq ${event.seq} a second time`);
    }
    if ((options.contentHashes?.[index] ?? eventHash(event)) !== event.hash) {
      return fail(index, 'bad_hash', `Event ${index} (${event.type}) does not hash to its recorded hash`);
    }
    if (event.prev !== prevHash) {
      return fail(
        index,
        'broken_link',
        `Event ${index} (${event.type}) does not point back to event ${index - 1}`,
      );
    }
    if (index === 0 && event.type !== 'Started') {
      return fail(index, 'not_started', `Expected a Started event at seq 0, found ${event.type}`);
    }
    if (index > 0 && event.type === 'Started') {
      return fail(index, 'not_started', `Expected one Started event at seq 0, found another at seq ${index}`);
    }
    if (event.agentId !== first.agentId) {
      return fail(
        index,
        'agent_mismatch',
        `Expected agent ${first.agentId}, found ${event.agentId} at seq ${index}`,
      );
    }
    if (ended) return fail(index, 'after_end', `Expected nothing after the agent ended, found ${event.type}`);
    if (event.type === 'InferenceSubmitted' && options.rerender) {
      const which = `Round ${event.round}${event.request !== undefined && event.request > 1 ? `, request ${event.request}` : ''}`;
      let rendered: RenderedInput;
      try {
        rendered = options.rerender(events, index);
      } catch (error) {
        return fail(index, 'rerender_failed', `Could not re-render ${which}: ${String(error)}`);
      }
      checkedInferences += 1;
      if (requestHash(rendered) !== event.inputHash) {
        return fail(
          index,
          'input_mismatch',
          `${which}: the input re-rendered from the journal does not match the recorded input hash`,
        );
      }
    }
    prevHash = event.hash;
    ended = isTerminal(event);
  }
  return { ok: true, checkedEvents: events.length, checkedInferences };
}

/** The hash a model request's input is recorded under. */
export function requestHash(rendered: RenderedInput): string {
  const { system, input, tools, continuation, modelSettings } = rendered;
  return continuation !== undefined && continuation.length > 0
    ? hashContinuation(system, input, tools, continuation, modelSettings)
    : hashInput(system, input, tools, modelSettings);
}

/** {@link VerifyResult} of a journal file, plus whether its last append was torn. */
export interface FileVerifyResult extends VerifyResult {
  /** The file ended in a torn append, which was ignored (not a failure: a crash can leave one). */
  readonly tornTail: boolean;
}

/**
 * Reads and verifies the journal file at `path` (what `troupe verify` runs). Damaged lines count
 * as failures: the first bad seq is the earlier of the first damaged line's position and the first
 * bad event, so damage to the last event is reported even though no later event points back to it.
 * Throws only when the file cannot be read (`journal_not_found`, `journal_io`).
 */
export function verifyJournalFile(path: string, options: VerifyOptions = {}): FileVerifyResult {
  return verifyJournalContents(readJournal(path, { hashes: true }), options);
}

/** {@link verifyJournalFile} for contents already read or parsed (`readJournal`, `parseJournal`). */
export function verifyJournalContents(
  contents: JournalContents,
  options: VerifyOptions = {},
): FileVerifyResult {
  const result = verifyJournal(contents.events, withHashes(contents, options));
  const problem = contents.problems[0];
  // Lines before the first damaged one all parsed, so line n (1-based) is where seq n - 1 belongs.
  const damagedSeq = problem ? problem.line - 1 : Number.POSITIVE_INFINITY;
  if (!problem || (result.firstBad && result.firstBad.seq < damagedSeq)) {
    return { ...result, tornTail: contents.tornTail };
  }
  return {
    ok: false,
    checkedEvents: Math.min(result.checkedEvents, damagedSeq),
    checkedInferences: result.checkedInferences,
    firstBad: {
      seq: damagedSeq,
      reason: 'damaged_line',
      message: `Line ${problem.line}: ${problem.message}`,
    },
    tornTail: contents.tornTail,
  };
}

/** What is wrong with a journal's contents, as {@link journalDamage} finds it. */
export interface JournalDamage {
  /** 1-based line of the file where the journal stops being trustworthy. */
  readonly line: number;
  /** The seq of the event that belongs on that line. */
  readonly seq: number;
  /** The reader's problem (a line that is not a well-formed event), or the chain's failure. */
  readonly reason: JournalProblem['reason'] | VerifyReason;
  readonly message: string;
}

/**
 * What is wrong with a journal's contents (`readJournal`, `parseJournal`), or undefined when
 * nothing is: the first line that is not a well-formed event, or the first break of the hash
 * chain before it (an edited, lost, duplicated or spliced event), whichever comes first. A torn
 * last line (a crash cut the last append short) is not damage, nor is a journal without an end
 * or without events yet (one still being written). Checks the chain only, without re-rendering
 * model inputs: `troupe verify` does both. What `troupe report`, `troupe show` and `troupe replay`
 * check before they trust a journal.
 */
export function journalDamage(contents: JournalContents): JournalDamage | undefined {
  const problem = contents.problems[0];
  if (problem === undefined && contents.events.length === 0) return undefined;
  const bad = verifyJournal(contents.events, withHashes(contents, {})).firstBad;
  // Lines before the first damaged one all parsed, so line n (1-based) holds seq n - 1.
  if (bad !== undefined && (problem === undefined || bad.seq < problem.line - 1)) {
    return { line: bad.seq + 1, seq: bad.seq, reason: bad.reason, message: bad.message };
  }
  if (problem === undefined) return undefined;
  return { line: problem.line, seq: problem.line - 1, reason: problem.reason, message: problem.message };
}

/** `options` with the reader's content hashes of `contents`, unless the caller gave its own. */
function withHashes(contents: JournalContents, options: VerifyOptions): VerifyOptions {
  return contents.hashes === undefined || options.contentHashes !== undefined
    ? options
    : { ...options, contentHashes: contents.hashes };
}

/** `line 5: <what is wrong>`: a {@link JournalDamage} in one line. */
export function damageText(damage: JournalDamage): string {
  return `line ${damage.line}: ${damage.message}`;
}
