/**
 * An agent's instruction inbox on the main thread (thread engine): an append-only log. The agent asks for
 * instruction number `n` (how many it has already journaled), so a wait repeated after a thread
 * crash gets the same instruction again and none is lost or delivered twice. Instructions sent
 * before the agent waits are simply already in the log. A parked wait costs one callback and, when
 * the wait has a limit, one timer.
 */

/** Receives the answer to one wait: the instruction, or null (timeout, abandoned). */
export type Deliver = (text: string | null) => void;

interface PendingWait {
  readonly index: number;
  readonly deliver: Deliver;
  readonly timer: NodeJS.Timeout | undefined;
}

export class Mailbox {
  readonly #log: string[] = [];
  #waiting: PendingWait | undefined;

  /** Instructions sent so far. */
  get size(): number {
    return this.#log.length;
  }

  get isWaiting(): boolean {
    return this.#waiting !== undefined;
  }

  /**
   * Appends an instruction and wakes, synchronously, the parked wait that asked for it. Returns the
   * instruction's index.
   */
  send(text: string): number {
    const index = this.#log.push(text) - 1;
    const waiting = this.#waiting;
    if (waiting && waiting.index < this.#log.length) {
      this.#waiting = undefined;
      if (waiting.timer) clearTimeout(waiting.timer);
      waiting.deliver(this.#log[waiting.index] ?? null);
    }
    return index;
  }

  /**
   * Calls `deliver` with instruction number `index` (0-based): at once when it was sent already,
   * else when it is sent, or with null after `timeoutMs` (undefined = no limit). A new wait ends
   * an older parked one with null.
   */
  park(index: number, timeoutMs: number | undefined, deliver: Deliver): void {
    const ready = this.#log[index];
    if (ready !== undefined) {
      deliver(ready);
      return;
    }
    this.abandon();
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            if (this.#waiting?.deliver === deliver) this.#waiting = undefined;
            deliver(null);
          }, timeoutMs);
    this.#waiting = { index, deliver, timer };
  }

  /** {@link park} as a promise. */
  wait(index: number, timeoutMs: number | undefined): Promise<string | null> {
    return new Promise((resolve) => this.park(index, timeoutMs, resolve));
  }

  /**
   * Drops the parked wait if it is the one `deliver` answers, without answering it: its asker gave
   * up and has its answer already (a host that cancelled its wait, or died).
   */
  withdraw(deliver: Deliver): void {
    const waiting = this.#waiting;
    if (waiting?.deliver !== deliver) return;
    this.#waiting = undefined;
    if (waiting.timer) clearTimeout(waiting.timer);
  }

  /** Ends a parked wait with null (cancel, host death, close). */
  abandon(): void {
    const waiting = this.#waiting;
    if (!waiting) return;
    this.#waiting = undefined;
    if (waiting.timer) clearTimeout(waiting.timer);
    waiting.deliver(null);
  }
}
