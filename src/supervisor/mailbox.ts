/**
 * An agent's instruction inbox on the supervisor: an append-only log. The agent asks for
 * instruction number `n` (how many it has already journaled), so a wait repeated after a thread
 * crash gets the same instruction again and none is lost or delivered twice. Instructions sent
 * before the agent waits are simply already in the log. A parked wait costs one pending promise
 * and, when the wait has a limit, one timer.
 */

interface PendingWait {
  readonly index: number;
  readonly resolve: (text: string | null) => void;
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

  /** Appends an instruction and wakes the parked wait that asked for it. */
  send(text: string): void {
    this.#log.push(text);
    const waiting = this.#waiting;
    if (waiting && waiting.index < this.#log.length) {
      this.#waiting = undefined;
      if (waiting.timer) clearTimeout(waiting.timer);
      waiting.resolve(this.#log[waiting.index] ?? null);
    }
  }

  /**
   * Resolves with instruction number `index` (0-based), parking until it is sent, or null after
   * `timeoutMs` (undefined = no limit). A new wait replaces an older parked one.
   */
  wait(index: number, timeoutMs: number | undefined): Promise<string | null> {
    const ready = this.#log[index];
    if (ready !== undefined) return Promise.resolve(ready);
    this.abandon();
    return new Promise((resolve) => {
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              if (this.#waiting?.resolve === resolve) this.#waiting = undefined;
              resolve(null);
            }, timeoutMs);
      this.#waiting = { index, resolve, timer };
    });
  }

  /** Ends a parked wait with null (cancel, host death, close). */
  abandon(): void {
    const waiting = this.#waiting;
    if (!waiting) return;
    this.#waiting = undefined;
    if (waiting.timer) clearTimeout(waiting.timer);
    waiting.resolve(null);
  }
}
