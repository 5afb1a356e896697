/**
 * The audit journal on a Redis Stream, one per agent: the same events, chained exactly as a file or
 * memory journal chains them (src/journal/chain.ts). One stream entry per script call that carries
 * the journal's events: its field `e` holds the events' canonical JSON lines joined by `\n` (JSONL,
 * as a file journal stores them), and its id is `<seq + 1>-0` of its last event, so ids grow with
 * the chain and the stream's top id tells where the chain ends. A stream written one entry per
 * event (by earlier versions) reads the same way: each of its entries holds one line. Earlier
 * versions read only such streams: a worker of an earlier version cannot resume an agent a newer
 * one journaled.
 *
 * Why not an entry per event: that cost Redis one `XADD` (and one AOF record) per event, ~3.3 µs
 * of server CPU each, 4-5 per model request; the journal's script was the largest share of the
 * server's time on the scaleout workload (bench/RESULTS.md, redis25).
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
 * adds the journal to the turn's script call, which every journal on the connection shares and
 * which leaves at the end of the turn (or, while this journal's previous entry is unanswered, to
 * the call after that answer): the moment ioredis's auto-pipelining wrote each journal's own call
 * before, so the events leave no later than they did, and before anything the worker queues on
 * the connection after the commit (the signal that reports them). The entry is cut when the call
 * is built, so it holds everything the journal appended by then: a turn's commits (the call of a
 * tool and the next request, say) cost one entry, not one each. A side effect outside Redis
 * (a model request) may start before the call is written, as it could before: only
 * {@link RedisJournal.flushed} says Redis has the events.
 *
 * Durability is Redis's: with `appendonly yes` and `appendfsync always` an acknowledged append
 * survives a server crash; {@link RedisJournal.flushed} resolves once every append so far is
 * acknowledged, which the worker awaits before running a tool with side effects.
 */
import type { Redis } from 'ioredis';
import { SystemError } from '../../errors.ts';
import { type ChainHead, chainCanonical, EMPTY_HEAD, headAfter, withHash } from '../../journal/chain.ts';
import { type AuditEvent, type AuditEventInput, auditEventProblem } from '../../journal/events.ts';
import type { JournalSink } from '../../journal/sink.ts';
import { journalRegistryOf } from './keys.ts';
import { LuaScript } from './script.ts';

// One call appends one entry to each of several journals: KEYS are (journal, fence key, registry,
// registry counter) quadruples, ARGV (fence token or '', the id the stream must end at, the new
// entry's id, its text, how many entries the writer knows the stream holds or -1, the journal's
// registry entry or '') sextuples. It answers one status per journal: the stream's length once the
// entry is appended, 0 for a resend of an entry that already landed, or an error text. The entry
// that creates a stream also enters it in its queue's registry (keys.ts `journals`), numbered by
// the counter, in the same call: whoever creates a journal registers it (journal-registry.ts).
//
// An append that follows on reads neither the stream's top nor its entries: the stream holds as
// many entries as its writer knows of (XLEN, O(1)) and XADD refuses an id that is not above the
// stream's last one. Journal entries are only ever appended (never XDEL'd or trimmed; a journal
// goes only as a whole key), so a stream of the writer's length that takes the new id ends where
// the writer's last entry does. Reading the top instead copied its whole entry (events of a commit)
// into Lua on every append: a third of the script's server time (bench/RESULTS.md, cmds26). Any
// other length (a resend, another writer, a lost or deleted stream, a writer that does not know)
// or a refused XADD takes the slow path, which compares the top and the entry at the new id as
// before: gap, conflict and resend are told apart exactly as they always were. Each fence key is
// read once per call (nothing else runs while the script does, and it writes no lock).
const APPEND = new LuaScript(
  `
local out = {}
-- Fence keys read so far in this call: agents whose jobs share a lock (a batch) read it once.
local locks = {}
local function check(key, previous, id, text)
  local top = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)
  local topId = '0-0'
  if top[1] then topId = top[1][1] end
  if topId == previous then return nil end
  local same = redis.call('XRANGE', key, id, id)
  if same[1] and same[1][2][2] == text then return 0 end
  if same[1] then return 'TROUPE_JOURNAL_CONFLICT another entry is already at ' .. id end
  return 'TROUPE_JOURNAL_GAP expected the journal to end at ' .. previous .. ', it ends at ' .. topId
end
for a = 1, #KEYS / 4 do
  local key = KEYS[4 * a - 3]
  local token, previous, id, text = ARGV[6 * a - 5], ARGV[6 * a - 4], ARGV[6 * a - 3], ARGV[6 * a - 2]
  local length = redis.call('XLEN', key)
  local known = length == tonumber(ARGV[6 * a - 1])
  local status = nil
  if not known then status = check(key, previous, id, text) end
  if status == nil then
    local fence = KEYS[4 * a - 2]
    if token ~= '' and locks[fence] == nil then locks[fence] = redis.call('GET', fence) end
    if token ~= '' and locks[fence] ~= token then
      status = 'TROUPE_JOURNAL_FENCED this worker no longer holds the job lock'
    elseif type(redis.pcall('XADD', key, id, 'e', text)) == 'table' then
      -- Refused: the id is not above the stream's last. Told apart by the slow path, unless it ran.
      local refused = 'TROUPE_JOURNAL_CONFLICT the journal stream refuses entry ' .. id
      if known then status = check(key, previous, id, text) or refused else status = refused end
    else
      status = length + 1
      local member = ARGV[6 * a]
      if length == 0 and member ~= '' then
        redis.call('ZADD', KEYS[4 * a - 1], redis.call('INCR', KEYS[4 * a]), member)
      end
    end
  end
  out[a] = status
end
return out
`,
  'any',
);

/** Events in one stream entry at most. */
const MAX_BATCH = 100;

/** Journals in one script call at most, and their entries' text at most (a call blocks Redis). */
const MAX_CALL_JOURNALS = 500;
const MAX_CALL_CHARS = 4 * 1024 * 1024;

/** Journals holding events not yet committed, all committed at the end of the turn. */
const uncommitted = new Set<RedisJournal>();
let turnCommitScheduled = false;

/** Set while the end of a turn commits: the group calls then leave at once, not a turn later. */
let endingTurn = false;
const groupsToSend = new Set<AppendGroup>();

function commitTurn(): void {
  turnCommitScheduled = false;
  endingTurn = true;
  try {
    for (const journal of uncommitted) journal.commit();
  } finally {
    endingTurn = false;
  }
  for (const group of groupsToSend) group.send();
  groupsToSend.clear();
}

/** One journal's entry in a group call: the script's KEYS quadruple and ARGV sextuple for it. */
interface GroupEntry {
  readonly journal: RedisJournal;
  readonly fenceKey: string;
  readonly token: string;
  readonly previous: string;
  readonly id: string;
  readonly text: string;
  /** Entries the writer knows the stream holds, -1 when it does not know. */
  readonly entries: number;
}

/**
 * The commits of every journal on one connection during one event-loop turn, sent as one script
 * call at its end (`setImmediate`: when ioredis's auto-pipelining writes what a turn queued, so
 * the call leaves no later than per-journal calls did). A call per agent and commit cost the
 * worker a command, a promise and a reply each, and Redis a script call each. The group holds the
 * journals themselves, not their entries: each journal's entry is cut when the call is built, so
 * everything a journal held by then (its commits of the turn, and what it appended after them)
 * leaves as one entry, and the answer goes back to the journal without a promise per entry.
 */
class AppendGroup {
  readonly #redis: Redis;
  #journals: RedisJournal[] = [];
  #scheduled = false;

  constructor(redis: Redis) {
    this.#redis = redis;
  }

  /** Sends what `journal` holds with this turn's call. */
  add(journal: RedisJournal): void {
    this.#journals.push(journal);
    if (endingTurn) groupsToSend.add(this);
    else if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.send());
    }
  }

  /** Sends every journal added so far. */
  send(): void {
    this.#scheduled = false;
    const journals = this.#journals;
    if (journals.length === 0) return;
    this.#journals = [];
    const entries: GroupEntry[] = [];
    for (const journal of journals) {
      const entry = journal.takeEntry();
      if (entry !== undefined) entries.push(entry);
    }
    let from = 0;
    while (from < entries.length) {
      let to = from;
      let chars = 0;
      while (
        to < entries.length &&
        to - from < MAX_CALL_JOURNALS &&
        (to === from || chars < MAX_CALL_CHARS)
      ) {
        chars += (entries[to] as GroupEntry).text.length;
        to += 1;
      }
      this.#call(from === 0 && to === entries.length ? entries : entries.slice(from, to));
      from = to;
    }
  }

  #call(entries: readonly GroupEntry[]): void {
    const keys: string[] = [];
    const args: string[] = [];
    for (const entry of entries) {
      const registry = entry.journal.registry;
      keys.push(
        entry.journal.key,
        entry.fenceKey,
        registry?.registry ?? entry.journal.key,
        registry?.seq ?? entry.journal.key,
      );
      args.push(
        entry.token,
        entry.previous,
        entry.id,
        entry.text,
        String(entry.entries),
        registry?.member ?? '',
      );
    }
    APPEND.run(this.#redis, keys, args).then(
      (reply) => {
        const statuses: unknown[] = Array.isArray(reply) ? reply : [];
        for (let i = 0; i < entries.length; i += 1) {
          settleEach((entries[i] as GroupEntry).journal, statuses[i], undefined);
        }
      },
      (error: unknown) => {
        for (const entry of entries) settleEach(entry.journal, undefined, { error });
      },
    );
  }
}

/**
 * Answers one journal of a call. A throwing `onFailure` does not leave the call's other journals
 * unanswered: its error is thrown on its own, as an uncaught exception.
 */
function settleEach(
  journal: RedisJournal,
  status: unknown,
  failed: { readonly error: unknown } | undefined,
): void {
  try {
    journal.settle(status, failed);
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}

const groups = new WeakMap<Redis, AppendGroup>();

function groupOf(redis: Redis): AppendGroup {
  let group = groups.get(redis);
  if (!group) {
    group = new AppendGroup(redis);
    groups.set(redis, group);
  }
  return group;
}

/**
 * How many stream entries held the events {@link readRedisJournal} returned: a journal opened with
 * those events knows the stream's length, and its appends skip the script's slow path.
 */
const entriesRead = new WeakMap<readonly AuditEvent[], number>();

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
  /** The agent's journal stream. */
  readonly key: string;
  /** The registry its stream is entered in as it is created (none for a fork's draft). */
  readonly registry: ReturnType<typeof journalRegistryOf>;
  /** The turn's script call of this journal's connection. */
  readonly #group: AppendGroup;
  readonly #key: string;
  readonly #fence: { readonly key: string; readonly token: string } | undefined;
  readonly #onFailure: ((error: SystemError) => void) | undefined;
  readonly #now: () => Date;
  #head: ChainHead;
  #agentId: string | undefined;
  /**
   * The events not yet sent, as pairs: the hashed canonical text and its hash (the stored line is
   * built from both only when the entry's text is, as the file journal's writer does), and the
   * `seq` of the first. {@link #pendingEvents} counts the events (half the array's length).
   */
  readonly #pending: string[] = [];
  #pendingSeq = 0;
  #pendingEvents = 0;
  /** Added to its group for the next call (its entry is cut then). */
  #queued = false;
  /** An entry was sent and is not answered yet: the next one waits for the answer. */
  #inFlight = false;
  /** {@link flushed} callers waiting for every append so far to be answered. */
  #waiters: { resolve: () => void; reject: (error: SystemError) => void }[] | undefined;
  #failure: SystemError | undefined;
  /** Entries the stream holds as far as this journal knows (-1: it does not). */
  #entries: number;

  constructor(options: RedisJournalOptions) {
    this.#group = groupOf(options.redis);
    this.#key = options.key;
    this.key = options.key;
    this.registry = journalRegistryOf(options.key);
    this.#fence = options.fence;
    this.#onFailure = options.onFailure;
    this.#now = options.now ?? (() => new Date());
    const last = options.events?.at(-1);
    this.#head = last ? headAfter(last) : EMPTY_HEAD;
    this.#agentId = options.events?.[0]?.agentId;
    const events = options.events;
    this.#entries = events === undefined || events.length === 0 ? 0 : (entriesRead.get(events) ?? -1);
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
   * the latest). After a failed append, events are dropped (the run is being stopped through
   * `onFailure`). The event is not parsed back from its line: the loop does not use it, and the
   * parse cost the worker a JSON.parse and its garbage per event that a thread host's file journal
   * does not pay (see {@link appendEvent}).
   */
  append(input: AuditEventInput): void {
    this.#append(input);
  }

  /** {@link append}, returning the event as stored (parsed back from its line, as a reader sees it). */
  appendEvent(input: AuditEventInput): AuditEvent {
    const canonical = this.#append(input);
    return JSON.parse(withHash(canonical, this.#head.lastHash)) as AuditEvent;
  }

  /** Returns the event's hashed canonical text; the journal's head is then the event's. */
  #append(input: AuditEventInput): string {
    const { canonical, head } = chainCanonical(input, this.#head, this.#now);
    if (this.#failure) {
      // Nothing is sent any more; the head still moves, so appendEvent reports the event's hash.
      this.#head = head;
      return canonical;
    }
    if (this.#agentId !== undefined && input.agentId !== this.#agentId) {
      throw new SystemError(
        'journal_agent_mismatch',
        `Expected events of agent ${this.#agentId} in ${this.#key}, got one of ${input.agentId}`,
        { key: this.#key, expected: this.#agentId, actual: input.agentId },
      );
    }
    this.#agentId = input.agentId;
    this.#head = head;
    if (this.#pendingEvents === 0) this.#pendingSeq = head.nextSeq - 1;
    this.#pending.push(canonical, head.lastHash);
    this.#pendingEvents += 1;
    if (this.#pendingEvents >= MAX_BATCH) this.commit();
    else if (!this.#queued && !this.#inFlight) {
      uncommitted.add(this);
      if (!turnCommitScheduled) {
        turnCommitScheduled = true;
        setImmediate(commitTurn);
      }
    }
    return canonical;
  }

  /**
   * Sends the events appended so far: as one entry in this turn's group call, or, while an earlier
   * entry is unanswered, in the call after its answer (a journal's entries never overlap: an entry
   * sent before the previous one is answered could overtake it, since after a server restart
   * EVALSHA fails over to EVAL). Never throws; a failed append is reported through `onFailure`
   * and {@link flushed}.
   */
  commit(): void {
    uncommitted.delete(this);
    if (this.#pendingEvents > 0 && !this.#queued && !this.#inFlight && !this.#failure) this.#enqueue();
  }

  /** Joins the connection's next script call; the entry is cut when the call is built. */
  #enqueue(): void {
    this.#queued = true;
    this.#group.add(this);
  }

  /** Resolves once every append so far is acknowledged; rejects with the failure if one failed. */
  flushed(): Promise<void> {
    this.commit();
    if (this.#failure) return Promise.reject(this.#failure);
    if (!this.#queued && !this.#inFlight) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.#waiters ??= [];
      this.#waiters.push({ resolve, reject });
    });
  }

  /**
   * For the journal's {@link AppendGroup} only (not part of the sink's interface). The group's
   * call is being built: the entry of up to MAX_BATCH of the events held (one entry per event
   * would cost Redis an XADD each), now in flight; undefined when there is nothing to send (a
   * failure since the commit).
   */
  takeEntry(): GroupEntry | undefined {
    this.#queued = false;
    if (this.#failure || this.#pendingEvents === 0) {
      this.#settled();
      return undefined;
    }
    const firstSeq = this.#pendingSeq;
    const count = Math.min(this.#pendingEvents, MAX_BATCH);
    const text = entryText(this.#pending, count);
    if (count === this.#pendingEvents) this.#pending.length = 0;
    else this.#pending.splice(0, 2 * count);
    this.#pendingEvents -= count;
    this.#pendingSeq = firstSeq + count;
    this.#inFlight = true;
    return {
      journal: this,
      fenceKey: this.#fence?.key ?? this.#key,
      token: this.#fence?.token ?? '',
      previous: firstSeq === 0 ? '0-0' : entryId(firstSeq - 1),
      id: entryId(firstSeq + count - 1),
      text,
      entries: this.#entries,
    };
  }

  /**
   * For the journal's {@link AppendGroup} only. The answer to this journal's entry: the stream's
   * length with the entry (appended), 0 (it had landed already) or an error text; or how the call
   * failed. Events held meanwhile go next.
   */
  settle(status: unknown, failed?: { readonly error: unknown }): void {
    this.#inFlight = false;
    if (failed !== undefined) this.#fail(failed.error);
    else if (typeof status !== 'number' || status < 0) this.#fail(String(status));
    else this.#entries = status > 0 ? status : this.#entries < 0 ? -1 : this.#entries + 1;
    if (this.#failure) {
      this.#pending.length = 0;
      this.#pendingEvents = 0;
    } else if (this.#pendingEvents > 0) {
      this.#enqueue();
      return;
    }
    this.#settled();
  }

  /** Nothing is queued or in flight: {@link flushed} callers learn how it ended. */
  #settled(): void {
    const waiters = this.#waiters;
    if (waiters === undefined) return;
    this.#waiters = undefined;
    const failure = this.#failure;
    for (const waiter of waiters) {
      if (failure) waiter.reject(failure);
      else waiter.resolve();
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

/** The text of an entry of the first `count` events of `pending` (pairs): their stored lines, JSONL. */
function entryText(pending: readonly string[], count: number): string {
  let text = withHash(pending[0] as string, pending[1] as string);
  for (let i = 1; i < count; i += 1) {
    text += `\n${withHash(pending[2 * i] as string, pending[2 * i + 1] as string)}`;
  }
  return text;
}

const PAGE = 1_000;

/**
 * Every event of the journal stream at `key`, oldest first ([] when there is none). Throws
 * SystemError `journal_corrupt` when an entry does not hold well-formed events that continue the
 * chain's sequence and end at the entry's id.
 */
export async function readRedisJournal(redis: Redis, key: string): Promise<AuditEvent[]> {
  const events: AuditEvent[] = [];
  let entries = 0;
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
    entries += page.length;
    const last = page.at(-1);
    if (page.length < PAGE || last === undefined) {
      entriesRead.set(events, entries);
      return events;
    }
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
