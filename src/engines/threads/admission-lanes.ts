/**
 * Where one provider key's requests wait for a place: a {@link RateLane} (p-queue, whose strict
 * window enforces a request rate) for keys with `requestsPerInterval`, a {@link Gate} (a counter
 * and a priority list) for keys with only a concurrency limit.
 *
 * The gate exists for cost: p-queue spends about 5 µs of main-thread CPU per request (an async
 * function, promises, a task record, events), several times the rest of admission, and a key with
 * no rate needs none of it. The gate keeps p-queue's order exactly (higher priority first, first
 * come first served within a priority, nothing starts while paused); the admission tests check
 * the two against each other.
 */
import PQueue, { PriorityQueue } from 'p-queue';

/** A waiting request, started once it may take a place. */
export interface LaneEntry {
  /** Unique among the lane's entries. */
  readonly id: number;
  /** Takes the place; `finish` gives it back (exactly once). */
  start(finish: () => void): void;
}

/** A key's waiting line. */
export interface Lane {
  /** Queues `entry`, or starts it at once when there is room. */
  enqueue(entry: LaneEntry, priority: number): void;
  /** Takes a waiting entry out of the line (no effect once it started). */
  remove(entry: LaneEntry): void;
  /** Starts nothing until resume(). */
  pause(): void;
  resume(): void;
  /** Drops every waiting entry; started ones keep their places. */
  clear(): void;
}

/** p-queue for a key with a request rate (and maybe a concurrency limit). */
export class RateLane implements Lane {
  readonly #queue: PQueue;
  /** p-queue's current list of waiting tasks (clear() makes a new one), to remove an entry. */
  #waiting: PriorityQueue | undefined;

  constructor(concurrency: number, rate: { readonly count: number; readonly intervalMs: number }) {
    const lane = this;
    this.#queue = new PQueue({
      concurrency,
      intervalCap: rate.count,
      interval: rate.intervalMs,
      strict: true,
      // p-queue removes a waiting task only through an AbortSignal, which would cost a signal and
      // two listeners per request; holding on to its list lets a rare cancel remove by id.
      queueClass: class extends PriorityQueue {
        constructor() {
          super();
          lane.#waiting = this;
        }
      },
    });
  }

  enqueue(entry: LaneEntry, priority: number): void {
    void this.#queue.add(() => new Promise<void>((finish) => entry.start(finish)), {
      priority,
      id: String(entry.id),
    });
  }

  remove(entry: LaneEntry): void {
    this.#waiting?.remove(String(entry.id));
  }

  pause(): void {
    this.#queue.pause();
  }

  resume(): void {
    this.#queue.start();
  }

  clear(): void {
    this.#queue.clear();
  }
}

interface Waiting {
  readonly priority: number;
  readonly entry: LaneEntry;
}

/** Past this many consumed entries at the head (and more than half the list), the list is compacted. */
const COMPACT_AFTER = 100;

/** A concurrency limit without a rate: p-queue's order at a fraction of its cost per request. */
export class Gate implements Lane {
  readonly #limit: number;
  /** Started entries, including finished ones not yet counted off (see #finish). */
  #running = 0;
  #finished = 0;
  #countScheduled = false;
  #paused = false;
  /** Highest priority first, first come first within a priority; live entries from #head on. */
  #list: Waiting[] = [];
  #head = 0;
  /**
   * Like p-queue, a finished entry frees its place in a microtask, not at once: a release and an
   * acquire in the same turn then pick the same next entry as p-queue would. One microtask serves
   * every release of the turn.
   */
  readonly #finish = (): void => {
    this.#finished += 1;
    if (this.#countScheduled) return;
    this.#countScheduled = true;
    queueMicrotask(this.#countFinished);
  };
  readonly #countFinished = (): void => {
    this.#countScheduled = false;
    this.#running -= this.#finished;
    this.#finished = 0;
    this.#drain();
  };

  constructor(concurrency: number) {
    this.#limit = concurrency;
  }

  enqueue(entry: LaneEntry, priority: number): void {
    const list = this.#list;
    const last = list[list.length - 1];
    if (this.#head === list.length) {
      list.length = 0;
      this.#head = 0;
      list.push({ priority, entry });
    } else if (last !== undefined && last.priority >= priority) {
      list.push({ priority, entry });
    } else {
      list.splice(this.#insertionIndex(priority), 0, { priority, entry });
    }
    this.#drain();
  }

  remove(entry: LaneEntry): void {
    const index = this.#list.findIndex((waiting, i) => i >= this.#head && waiting.entry === entry);
    if (index >= 0) this.#list.splice(index, 1);
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    this.#drain();
  }

  clear(): void {
    this.#list = [];
    this.#head = 0;
  }

  /** First live index whose priority is below `priority` (binary search; the list is sorted). */
  #insertionIndex(priority: number): number {
    let low = this.#head;
    let high = this.#list.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.#list[middle]?.priority ?? Number.NEGATIVE_INFINITY) >= priority) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  #drain(): void {
    while (!this.#paused && this.#running < this.#limit && this.#head < this.#list.length) {
      const next = this.#list[this.#head];
      this.#head += 1;
      if (this.#head === this.#list.length) {
        this.#list.length = 0;
        this.#head = 0;
      } else if (this.#head > COMPACT_AFTER && this.#head > this.#list.length / 2) {
        this.#list.splice(0, this.#head);
        this.#head = 0;
      }
      if (next === undefined) return;
      this.#running += 1;
      next.entry.start(this.#finish);
    }
  }
}
