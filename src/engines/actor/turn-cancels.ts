/**
 * One session's turn cancels, where an engine runs it (a thread's actor host, a redis worker's
 * job): the signal of the turn running now (`channels.turnSignal`, src/loop/session.ts), and the
 * cancels that arrived before their turn started (a message queued behind the turn in flight, then
 * cancelled), so they take effect when it starts. A cancel of a turn that has already ended is
 * ignored.
 */

/** Cancels kept for turns that have not started yet: more are dropped (each names one turn). */
const MAX_EARLY_CANCELS = 64;

export class TurnCancels {
  #turn = -1;
  #controller: AbortController | undefined;
  readonly #early = new Map<number, string>();

  /** Turn `turn` starts: its signal, aborted at once when it was cancelled before it began. */
  signal(turn: number): AbortSignal {
    this.#turn = turn;
    this.#controller = new AbortController();
    const early = this.#early.get(turn);
    for (const waiting of this.#early.keys()) if (waiting <= turn) this.#early.delete(waiting);
    if (early !== undefined) this.#controller.abort(new Error(early));
    return this.#controller.signal;
  }

  /** Cancels turn `turn`: the running one now, a later one when it starts, an ended one not at all. */
  cancel(turn: number, reason: string): void {
    if (turn === this.#turn) this.#controller?.abort(new Error(reason));
    else if (turn > this.#turn && (this.#early.size < MAX_EARLY_CANCELS || this.#early.has(turn)))
      this.#early.set(turn, reason);
  }
}
