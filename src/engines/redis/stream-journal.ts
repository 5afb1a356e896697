/**
 * The audit journal on a Redis Stream, one per agent: the same events, chained exactly as a file or
 * memory journal chains them (src/journal/chain.ts). One stream entry per commit: its field `e`
 * holds the committed events' canonical JSON lines joined by `\n` (JSONL, as a file journal stores
 * them), and its id is `<seq + 1>-0` of its last event, so ids grow with the chain and the stream's
 * top id tells where the chain ends. A stream written one entry per event (by earlier versions)
 * reads the same way: each of its entries is a commit of one line. Earlier versions read only
 * such streams: a worker of an earlier version cannot resume an agent a newer one journaled.
 *
 * Why one entry per commit: an entry per event cost Redis one `XADD` (and one AOF record) per
 * event, ~3.3 µs of server CPU each, 4-5 per model request; the journal's script was the largest
 * share of the server's time on the scaleout workload (bench/RESULTS.md, redis25).
 *
 * `append` is synchronous for the loop (it computes the event and queues the write); the write is
 * an atomic compare-and-append script that refuses a gap, a different entry at the same position,
 * and, when a BullMQ lock is given, any append by a worker that no longer holds the agent's job
 * lock. That fence is what keeps a worker that lost its job (a long pause, a partition) from
 * writing into the journal of the worker that took the job over. A resend of an append that
 * already landed (the client resends unanswered commands after a reconnect) is accepted as a no-op.
 *
 * Appends are batched per event-loop turn, as a batching file journal's are (docs/journal.md,
 * "Batched appends"): events wait in memory until {@link RedisJournal.commit}, which the loop
 * calls before every side effect (a model request, a tool's start, a wait, its end) and the
 * worker before every signal it sends, or until the end of the turn at the latest. A commit
 * issues the script call at once (queued behind one still unanswered), so the write is on the
 * connection before the side effect, as it was when every append issued its own; a turn's
 * events leave in one call and one entry instead of two or more.
 *
 * Durability is Redis's: with `appendonly yes` and `appendfsync always` an acknowledged append
 * survives a server crash; {@link RedisJournal.flushed} resolves once every append so far is
 * acknowledged, which the worker awaits before running a tool with side effects.
 */
import type { Redis } from 'ioredis';
import { SystemError } from '../../errors.ts';
import { type ChainHead, chainEvent, EMPTY_HEAD, headAfter } from '../../journal/chain.ts';
import { type AuditEvent, type AuditEventInput, auditEventProblem } from '../../journal/events.ts';
import type { JournalSink } from '../../journal/sink.ts';
import { LuaScript } from './script.ts';

// ARGV: fence token ('' = none), the id the stream must end at, the new entry's id, its text.
// An append that follows on (the stream ends where the entry starts) reads only the stream's top:
// ids only grow, so nothing can be at the new entry's id. Only otherwise does it look there, to
// tell a resend of an entry that already landed (a no-op) from a conflict or a gap.
const APPEND = new LuaScript(
  `
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local topId = '0-0'
if top[1] then topId = top[1][1] end
if topId ~= ARGV[2] then
  local same = redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])
  if same[1] then
    if same[1][2][2] == ARGV[4] then return 0 end
    return redis.error_reply('TROUPE_JOURNAL_CONFLICT another entry is already at ' .. ARGV[3])
  end
  return redis.error_reply('TROUPE_JOURNAL_GAP expected the journal to end at ' .. ARGV[2] .. ', it ends at ' .. topId)
end
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return redis.error_reply('TROUPE_JOURNAL_FENCED this worker no longer holds the job lock')
end
redis.call('XADD', KEYS[1], ARGV[3], 'e', ARGV[4])
return 1
`,
  2,
);

/** Events in one stream entry (one script call) at most. */
const MAX_BATCH = 100;

/** Journals holding events not yet committed, all committed at the end of the turn. */
const uncommitted = new Set<RedisJournal>();
let turnCommitScheduled = false;

function commitTurn(): void {
  turnCommitScheduled = false;
  for (const journal of uncommitted) journal.commit();
}

/** Id of the stream entry whose last event has sequence number `seq`. */
export function entryId(seq: number): string {
  return `${seq + 1}-0`;
}

/** Options of {@link RedisJournal}. */
export interface RedisJournalOptions {
  readonly redis: Redis;
  /** The agent's journal stream. */
  readonly key: string;
  /** Events already in the stream (read with {@link readRedisJournal}); the chain continues after the last. */
  readonly events?: readonly AuditEvent[];
  /** Append only while `key` holds `token` (BullMQ's job lock). */
  readonly fence?: { readonly key: string; readonly token: string };
  /** Called once, with the first failed append. Later appends are dropped. */
  readonly onFailure?: (error: SystemError) => void;
  /** Clock for `ts`. @default () => new Date() */
  readonly now?: () => Date;
}

/** A journal sink that appends to a Redis Stream. */
export class RedisJournal implements JournalSink {
  readonly #redis: Redis;
  readonly #key: string;
  readonly #fence: { readonly key: string; readonly token: string } | undefined;
  readonly #onFailure: ((error: SystemError) => void) | undefined;
  readonly #now: () => Date;
  #head: ChainHead;
  #agentId: string | undefined;
  /** Canonical JSON lines of the events not yet sent, and the `seq` of the first. */
  readonly #pending: string[] = [];
  #pendingSeq = 0;
  #writing: Promise<void> | undefined;
  #failure: SystemError | undefined;

  constructor(options: RedisJournalOptions) {
    this.#redis = options.redis;
    this.#key = options.key;
    this.#fence = options.fence;
    this.#onFailure = options.onFailure;
    this.#now = options.now ?? (() => new Date());
    const last = options.events?.at(-1);
    this.#head = last ? headAfter(last) : EMPTY_HEAD;
    this.#agentId = options.events?.[0]?.agentId;
  }

  /** `seq` the next event will get. */
  get nextSeq(): number {
    return this.#head.nextSeq;
  }

  /** The first failed append, if any: the journal accepts nothing after it. */
  get failure(): SystemError | undefined {
    return this.#failure;
  }

  /**
   * Chains `input` and holds it for the next {@link commit} (at the end of this event-loop turn at
   * the latest); returns the event as it will be stored. After a failed append, events are
   * dropped (the run is being stopped through `onFailure`).
   */
  append(input: AuditEventInput): AuditEvent {
    const { event, line } = chainEvent(input, this.#head, this.#now);
    if (this.#failure) return event;
    if (this.#agentId !== undefined && input.agentId !== this.#agentId) {
      throw new SystemError(
        'journal_agent_mismatch',
        `Expected events of agent ${this.#agentId} in ${this.#key}, got one of ${input.agentId}`,
        { key: this.#key, expected: this.#agentId, actual: input.agentId },
      );
    }
    this.#agentId = event.agentId;
    this.#head = headAfter(event);
    if (this.#pending.length === 0) this.#pendingSeq = event.seq;
    this.#pending.push(line);
    if (this.#pending.length >= MAX_BATCH) this.commit();
    else if (this.#writing === undefined) {
      uncommitted.add(this);
      if (!turnCommitScheduled) {
        turnCommitScheduled = true;
        setImmediate(commitTurn);
      }
    }
    return event;
  }

  /**
   * Sends the events appended so far: the script call is issued now, or, while an earlier one is
   * unanswered, as soon as it is answered (calls never overlap, see the write loop). Never throws;
   * a failed append is reported through `onFailure` and {@link flushed}.
   */
  commit(): void {
    uncommitted.delete(this);
    if (this.#pending.length > 0) this.#writing ??= this.#write();
  }

  /** Resolves once every append so far is acknowledged; rejects with the failure if one failed. */
  async flushed(): Promise<void> {
    this.commit();
    while (this.#writing) await this.#writing;
    if (this.#failure) throw this.#failure;
  }

  /**
   * Sends what is pending, one script call at a time, each with every event queued meanwhile:
   * a call issued before the previous one is answered could overtake it (after a server restart,
   * EVALSHA fails over to EVAL), and one call per event would cost a round trip each.
   */
  async #write(): Promise<void> {
    try {
      while (this.#pending.length > 0 && !this.#failure) {
        const firstSeq = this.#pendingSeq;
        const batch = this.#pending.splice(0, MAX_BATCH);
        this.#pendingSeq = firstSeq + batch.length;
        try {
          await APPEND.run(
            this.#redis,
            [this.#key, this.#fence?.key ?? this.#key],
            [
              this.#fence?.token ?? '',
              firstSeq === 0 ? '0-0' : entryId(firstSeq - 1),
              entryId(firstSeq + batch.length - 1),
              batch.length === 1 ? (batch[0] as string) : batch.join('\n'),
            ],
          );
        } catch (error) {
          this.#fail(error);
        }
      }
      if (this.#failure) this.#pending.length = 0;
    } finally {
      this.#writing = undefined;
    }
  }

  #fail(error: unknown): void {
    if (this.#failure) return;
    const message = error instanceof Error ? error.message : String(error);
    const code = message.startsWith('TROUPE_JOURNAL_FENCED')
      ? 'journal_fenced'
      : message.startsWith('TROUPE_JOURNAL_')
        ? 'journal_conflict'
        : 'journal_io';
    this.#failure = new SystemError(code, `Could not append to journal ${this.#key}: ${message}`, {
      key: this.#key,
    });
    this.#onFailure?.(this.#failure);
  }
}

const PAGE = 1_000;

/**
 * Every event of the journal stream at `key`, oldest first ([] when there is none). Throws
 * SystemError `journal_corrupt` when an entry does not hold well-formed events that continue the
 * chain's sequence and end at the entry's id.
 */
export async function readRedisJournal(redis: Redis, key: string): Promise<AuditEvent[]> {
  const events: AuditEvent[] = [];
  let start = '-';
  for (;;) {
    const page = await redis.xrange(key, start, '+', 'COUNT', PAGE);
    for (const [id, fields] of page) {
      const text = fields[1];
      const lines = text === undefined ? [undefined] : text.split('\n');
      for (const line of lines) {
        let value: unknown;
        try {
          value = line === undefined ? undefined : JSON.parse(line);
        } catch {
          value = undefined;
        }
        const problem = auditEventProblem(value);
        const event = value as AuditEvent;
        if (problem !== undefined || event.seq !== events.length) {
          throw corrupt(key, id, events.length, problem ?? 'an event out of sequence');
        }
        events.push(event);
      }
      if (entryId(events.length - 1) !== id) {
        throw corrupt(key, id, events.length - 1, `an entry whose last event is ${events.length - 1}`);
      }
    }
    const last = page.at(-1);
    if (page.length < PAGE || last === undefined) return events;
    start = `(${last[0]}`;
  }
}

function corrupt(key: string, entry: string, expected: number, found: string): SystemError {
  return new SystemError(
    'journal_corrupt',
    `Expected event ${expected} at entry ${entry} of ${key}, found ${found}`,
    { key, entry },
  );
}
