/**
 * The redis engine's index of its queue's journal streams for `Engine.childStarts`, as the thread
 * engine's (src/engines/threads/child-index.ts) is of its directory: the ids at the head of each
 * stream's first line, by the parent they name, kept in a {@link ParentHeads}
 * (src/engines/parent-heads.ts, shared with the thread engine's index). Each stream's first entry
 * is fetched once per engine, when a listing first finds the stream, so the bound of a search
 * (`JournalScanBounds.maxJournals`) counts only the streams naming that parent: a child late in a
 * run of more than that many agents is still found.
 *
 * Listing the queue's journal streams reads its registry (journal-registry.ts, keys.ts `journals`):
 * the entries numbered past the last one this index saw, new streams only, a page of
 * `REGISTRY_PAGE` (1,000) per round trip. Streams written by earlier versions are not registered,
 * so the first listing of an engine (and one that finds the registry's counter behind what it
 * saw: the registry was deleted) also lists the keys with a SCAN of the whole keyspace, one round
 * trip per `SCAN_COUNT` (1,000) keys of the database, whatever their queue; the registry is then
 * read from the number its counter held before that SCAN began, so a stream created meanwhile is
 * not missed. A stream an earlier version's worker creates after that is not seen by this engine.
 *
 * A search lists the streams once per `JournalScanBounds.search` (once per resumed agent's
 * adoption, not once per search under each of its finished descendants; a search without one
 * lists them each time), and needs a listing begun after that search's first call, so it sees
 * every stream that existed then. Listings are shared: at most one runs per engine at a time, and
 * every search that needs one while it runs waits for the single listing begun when it ends. So K
 * resumed agents adopted together list at most twice, not K times; adoptions one after another
 * list once each, each a round trip or two for the registry, whatever the keyspace holds.
 *
 * A registered stream found gone (expired) is skipped; a stream the SCAN finds with no entry yet
 * is read again by a later listing when it is registered. Memory: a key per stream read, and the
 * ids of those naming a parent.
 */
import type { Redis } from 'ioredis';
import { type AuditEvent, auditEventProblem } from '../../journal/events.ts';
import { startedHeadOf } from '../../journal/started-head.ts';
import { type ChildStart, type ChildStarts, childStartOf, type JournalScanBounds } from '../engine.ts';
import { ParentHeads } from '../parent-heads.ts';

/** Keys listed per SCAN round trip. */
const SCAN_COUNT = 1000;

/** Registry entries read per round trip. */
const REGISTRY_PAGE = 1000;

/** Where the index reads its queue's journal streams from. */
export interface RedisJournalListing {
  /** A SCAN pattern matching every journal stream of the queue (and no fork draft). */
  readonly pattern: string;
  /** The queue's registry of journal streams, and its counter (keys.ts `journals`, `journalsSeq`). */
  readonly registry: string;
  readonly seq: string;
  /** The journal stream of a registry entry (an agent id). */
  readonly keyOf: (member: string) => string;
}

export class RedisChildIndex {
  readonly #redis: Redis;
  readonly #source: RedisJournalListing;
  /** The highest registry number read, undefined before the first listing (which SCANs too). */
  #seen: number | undefined;
  /** The heads read, by stream key (a first line longer than the head bound: too long). */
  readonly #heads = new ParentHeads();
  /** The searches (`JournalScanBounds.search`) that have listed the queue's journal keys. */
  readonly #listed = new WeakSet<object>();
  /** The listing running. */
  #listing: Promise<void> | undefined;
  /** The listing to begin when the running one ends, shared by the searches that wait for it. */
  #next: Promise<void> | undefined;

  constructor(redis: Redis, listing: RedisJournalListing) {
    this.#redis = redis;
    this.#source = listing;
  }

  /**
   * The streams naming `parentId` as their parent: at most `bounds.maxJournals` of them have their
   * first line parsed whole (up to `bounds.maxBytes`, for the child's agent and task; a longer one
   * gives its ids only); the rest, and the streams whose first line is longer than
   * `bounds.maxHeadBytes`, are `notExamined`. A stream's first entry is fetched whole (a stream has
   * no partial reads).
   */
  async childStarts(parentId: string, bounds: JournalScanBounds): Promise<ChildStarts> {
    if (bounds.search === undefined || !this.#listed.has(bounds.search)) {
      await this.#list(bounds.maxHeadBytes);
      if (bounds.search !== undefined) this.#listed.add(bounds.search);
    }
    const names = `"parentId":${JSON.stringify(parentId)}`;
    const starts: ChildStart[] = [];
    const { examine, notExamined } = this.#heads.cut(parentId, bounds);
    for (const { name: key, head } of examine) {
      const line = await this.#firstLine(key);
      const event =
        line !== undefined && Buffer.byteLength(line) <= bounds.maxBytes ? parsed(line, names) : undefined;
      if (event?.type === 'Started' && event.parentId === parentId)
        starts.push(childStartOf(event.agentId, event.spawnCallId, event.definition.name, event.task));
      else starts.push(childStartOf(head.agentId, head.spawnCallId));
    }
    return { starts, notExamined };
  }

  /**
   * Resolves once a listing begun at or after this call has ended: the running one began before it,
   * so the call waits for the next, which every call made meanwhile shares (its head bound is the
   * first one's: the supervisor's searches all give the same).
   */
  #list(maxHeadBytes: number): Promise<void> {
    if (this.#next !== undefined) return this.#next;
    const running = this.#listing;
    if (running === undefined) return this.#begin(maxHeadBytes);
    const next = running
      .catch(() => {})
      .then(() => {
        this.#next = undefined;
        return this.#begin(maxHeadBytes);
      });
    this.#next = next;
    return next;
  }

  #begin(maxHeadBytes: number): Promise<void> {
    const listing = this.#refresh(maxHeadBytes).finally(() => {
      if (this.#listing === listing) this.#listing = undefined;
    });
    this.#listing = listing;
    return listing;
  }

  /** Reads the heads of the streams not read yet: the registry's new entries, and a SCAN the first time. */
  async #refresh(maxHeadBytes: number): Promise<void> {
    const { registry, seq, keyOf } = this.#source;
    const numbered = Number((await this.#redis.get(seq)) ?? 0);
    let seen = this.#seen;
    if (seen === undefined || numbered < seen) {
      // Streams of earlier versions are not registered; every stream numbered later is.
      await this.#scan(maxHeadBytes);
      seen = numbered;
    }
    for (;;) {
      const page = await this.#redis.zrangebyscore(
        registry,
        `(${seen}`,
        '+inf',
        'WITHSCORES',
        'LIMIT',
        0,
        REGISTRY_PAGE,
      );
      for (let i = 0; i + 1 < page.length; i += 2) {
        await this.#read(keyOf(page[i] as string), maxHeadBytes);
        seen = Math.max(seen, Number(page[i + 1]));
      }
      this.#seen = seen;
      if (page.length < 2 * REGISTRY_PAGE) return;
    }
  }

  /** Lists the queue's journal keys with SCAN (the whole keyspace) and reads the heads not read yet. */
  async #scan(maxHeadBytes: number): Promise<void> {
    let cursor = '0';
    do {
      const [next, keys] = await this.#redis.scan(cursor, 'MATCH', this.#source.pattern, 'COUNT', SCAN_COUNT);
      cursor = next;
      for (const key of keys) await this.#read(key, maxHeadBytes);
    } while (cursor !== '0');
  }

  /** Records the head of stream `key` unless read already or without an entry (gone, or not yet). */
  async #read(key: string, maxHeadBytes: number): Promise<void> {
    if (this.#heads.has(key)) return;
    const line = await this.#firstLine(key);
    if (line === undefined) return;
    // Another search may have read it meanwhile (adoptions of many resumed agents overlap):
    // the index keeps the first head recorded.
    const head = Buffer.byteLength(line) > maxHeadBytes ? 'too_long' : startedHeadOf(line);
    this.#heads.add(key, head);
  }

  /** The first line of the stream's first entry; undefined when it has none (yet). */
  async #firstLine(key: string): Promise<string | undefined> {
    const text = (await this.#redis.xrange(key, '-', '+', 'COUNT', 1))[0]?.[1][1];
    return text?.split('\n', 1)[0];
  }
}

/** The event of `line` when it names the parent (`names`) and is a valid audit event. */
function parsed(line: string, names: string): AuditEvent | undefined {
  if (!line.includes(names)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  return auditEventProblem(value) === undefined ? (value as AuditEvent) : undefined;
}
