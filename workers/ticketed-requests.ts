/**
 * What the host's admission and inbox clients share: requests that wait, by ticket, for an answer
 * from the supervisor, sent in one message per event-loop turn, and given up when their signal
 * aborts. A client owns its wire format; this owns the tickets, the waiters and the flush.
 */

/** How a client settles a request whose signal aborted. */
export type AbortSettler<T> = (settle: Settle<T>, reason: unknown) => void;

/** Both ends of a request's promise. */
export interface Settle<T> {
  readonly resolve: (value: T) => void;
  readonly reject: (reason: unknown) => void;
}

/**
 * A request waiting for its answer. It is its own abort listener (`handleEvent`): measured, an
 * object listener added without options costs about 1 µs less per request than a closure with
 * `{ once: true }` (Node's EventTarget validates options and wraps once-listeners).
 */
class Waiter<T> implements Settle<T> {
  readonly ticket: number;
  readonly signal: AbortSignal;
  readonly resolve: (value: T) => void;
  readonly reject: (reason: unknown) => void;
  readonly #onAbort: (waiter: Waiter<T>) => void;

  constructor(ticket: number, signal: AbortSignal, settle: Settle<T>, onAbort: (waiter: Waiter<T>) => void) {
    this.ticket = ticket;
    this.signal = signal;
    this.resolve = settle.resolve;
    this.reject = settle.reject;
    this.#onAbort = onAbort;
  }

  handleEvent(): void {
    this.#onAbort(this);
  }
}

/** What a client tells {@link TicketedRequests}. */
export interface TicketedRequestsHooks<T> {
  /** Sends everything queued since the last flush (called once per turn with something queued). */
  readonly flush: (withdrawn: ReadonlySet<number>) => void;
  /** The oldest ticket queued but not sent yet, if any: tickets rise, so the unsent are the newest. */
  readonly firstUnsent: () => number | undefined;
  /** Queues the cancel of a request already sent (the supervisor may hold it, or have answered). */
  readonly cancelSent: (ticket: number) => void;
  /** Settles a request whose signal aborted. */
  readonly settleAborted: AbortSettler<T>;
  /**
   * Arranges for {@link TicketedRequests.flushNow} to be called later in this turn, instead of the
   * requests' own `setImmediate` (a client whose requests ride in another message's flush).
   */
  readonly schedule?: () => void;
}

/** Tickets, waiters and the per-turn flush of one client. */
export class TicketedRequests<T> {
  readonly #hooks: TicketedRequestsHooks<T>;
  readonly #waiting = new Map<number, Waiter<T>>();
  readonly #onAbort = (waiter: Waiter<T>): void => this.#abort(waiter);
  /** Tickets aborted before their request was sent: the next flush leaves them out. */
  readonly #withdrawn = new Set<number>();
  #nextTicket = 1;
  #flushScheduled = false;

  constructor(hooks: TicketedRequestsHooks<T>) {
    this.#hooks = hooks;
  }

  /** Requests not answered yet. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** The ticket the next request gets (the client queues it under this number, then calls {@link wait}). */
  nextTicket(): number {
    return this.#nextTicket++;
  }

  /** The promise of the request queued under `ticket`; schedules the flush. */
  wait(ticket: number, signal: AbortSignal): Promise<T> {
    this.schedule();
    return new Promise<T>((resolve, reject) => {
      const waiter = new Waiter(ticket, signal, { resolve, reject }, this.#onAbort);
      this.#waiting.set(ticket, waiter);
      signal.addEventListener('abort', waiter);
    });
  }

  /**
   * Settles the request of `ticket` with `value`. False when no request waits on it: it was
   * aborted while the answer was on its way (the client decides what that means).
   */
  answer(ticket: number, value: T): boolean {
    const waiter = this.#waiting.get(ticket);
    if (waiter === undefined) return false;
    this.#waiting.delete(ticket);
    waiter.signal.removeEventListener('abort', waiter);
    waiter.resolve(value);
    return true;
  }

  /** Flushes at the end of this event-loop turn (once, however often it is asked). */
  schedule(): void {
    if (this.#hooks.schedule) {
      this.#hooks.schedule();
      return;
    }
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      this.flushNow();
    });
  }

  /** Sends what is queued now, without waiting for the end of the turn. */
  flushNow(): void {
    this.#hooks.flush(this.#withdrawn);
    this.#withdrawn.clear();
  }

  #abort(waiter: Waiter<T>): void {
    const { ticket } = waiter;
    waiter.signal.removeEventListener('abort', waiter);
    if (!this.#waiting.delete(ticket)) return;
    const firstUnsent = this.#hooks.firstUnsent();
    if (firstUnsent !== undefined && ticket >= firstUnsent) {
      this.#withdrawn.add(ticket);
    } else {
      this.#hooks.cancelSent(ticket);
      this.schedule();
    }
    this.#hooks.settleAborted(waiter, waiter.signal.reason);
  }
}

/**
 * `batch` without the requests whose ticket is in `withdrawn`: `stride` numbers per request, the
 * ticket first. `parallel`, when given, holds one item per request and is filtered the same way.
 */
export function withoutWithdrawn<P>(
  batch: readonly number[],
  stride: number,
  withdrawn: ReadonlySet<number>,
  parallel: readonly P[] = [],
): { readonly batch: number[]; readonly parallel: P[] } {
  const kept: number[] = [];
  const keptParallel: P[] = [];
  for (let i = 0, n = 0; i < batch.length; i += stride, n += 1) {
    if (withdrawn.has(batch[i] ?? 0)) continue;
    for (let k = i; k < i + stride; k += 1) kept.push(batch[k] ?? 0);
    const item = parallel[n];
    if (item !== undefined) keptParallel.push(item);
  }
  return { batch: kept, parallel: keptParallel };
}
