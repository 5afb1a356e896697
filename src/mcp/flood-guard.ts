/**
 * What a server may send on its own (notifications, requests): every message costs the agent's
 * thread a parse and a schema check, so a server sending `tools/list_changed` in a loop held every
 * agent on the thread. A bound per second alone let a server send just under it for ever (999 a
 * second kept a thread busy for as long as the connection lived), so there are three: a burst per
 * second, a count over the last minute, and the bytes of them over the last minute.
 */

/** The bounds of a {@link FloodGuard}. */
export interface FloodBounds {
  /** Messages in one second (a burst). */
  readonly perSecond: number;
  /** Messages in the last 60 seconds (sustained). */
  readonly perMinute: number;
  /** Bytes of those messages in the last 60 seconds. */
  readonly bytesPerMinute: number;
}

const WINDOW_SECONDS = 60;

/** Counts the messages a server sends on its own, in one-second slots over a sliding minute. */
export class FloodGuard {
  readonly #bounds: FloodBounds;
  readonly #now: () => number;
  readonly #counts = new Array<number>(WINDOW_SECONDS).fill(0);
  readonly #bytes = new Array<number>(WINDOW_SECONDS).fill(0);
  #second = Number.NEGATIVE_INFINITY;
  #minuteCount = 0;
  #minuteBytes = 0;

  /** @param now the clock, in milliseconds. @default Date.now */
  constructor(bounds: FloodBounds, now: () => number = Date.now) {
    this.#bounds = bounds;
    this.#now = now;
  }

  /**
   * Counts one message of `bytes` bytes (0 when unknown). Returns what it went past, said for a
   * person (`more than 1000 notifications in one second`), or undefined while within the bounds.
   */
  count(bytes: number): string | undefined {
    // A clock set back counts in the latest second seen.
    const second = Math.max(Math.floor(this.#now() / 1000), this.#second);
    this.#advance(second);
    const slot = second % WINDOW_SECONDS;
    this.#counts[slot] = (this.#counts[slot] ?? 0) + 1;
    this.#bytes[slot] = (this.#bytes[slot] ?? 0) + bytes;
    this.#minuteCount += 1;
    this.#minuteBytes += bytes;
    const bounds = this.#bounds;
    if ((this.#counts[slot] ?? 0) > bounds.perSecond) {
      return `more than ${bounds.perSecond} notifications in one second`;
    }
    if (this.#minuteCount > bounds.perMinute)
      return `more than ${bounds.perMinute} notifications in one minute`;
    if (this.#minuteBytes > bounds.bytesPerMinute) {
      return `more than ${bounds.bytesPerMinute} bytes of notifications in one minute`;
    }
    return undefined;
  }

  /** Empties the slots of the seconds that left the window (at most all of them). */
  #advance(second: number): void {
    if (second <= this.#second) return;
    const gone = Math.min(WINDOW_SECONDS, second - this.#second);
    for (let step = 1; step <= gone; step += 1) {
      const slot = (((second - gone + step) % WINDOW_SECONDS) + WINDOW_SECONDS) % WINDOW_SECONDS;
      this.#minuteCount -= this.#counts[slot] ?? 0;
      this.#minuteBytes -= this.#bytes[slot] ?? 0;
      this.#counts[slot] = 0;
      this.#bytes[slot] = 0;
    }
    this.#second = second;
  }
}
