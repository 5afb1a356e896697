/**
 * The host's end of its admission port: provider requests ask for a slot here, and everything asked
 * in one event-loop turn goes to the supervisor as one message (one timers phase can start hundreds
 * of requests). Grants come back batched the same way.
 */
import { SystemError } from '../src/errors.ts';
import {
  ADMISSION_ACQUIRE_STRIDE,
  ADMISSION_RELEASE_HOLD_MS,
  type AdmissionEndpoint,
  type AdmissionGrantMessage,
  type AdmissionRequestMessage,
} from '../src/protocol/messages.ts';
import { TicketedRequests, withoutWithdrawn } from './ticketed-requests.ts';

/** Asks the supervisor for provider slots over a raw port, batched per event-loop turn. */
export class AdmissionClient {
  readonly #port: AdmissionEndpoint<AdmissionGrantMessage, AdmissionRequestMessage>;
  readonly #keyIndex: ReadonlyMap<string, number>;
  readonly #requests: TicketedRequests<number>;
  #acquires: number[] = [];
  #releases: number[] = [];
  #cancels: number[] = [];
  /** When the oldest release not sent yet was made (see ADMISSION_RELEASE_HOLD_MS). */
  #heldSince = 0;
  readonly #now: () => number;

  /**
   * `keys` are the limited provider keys, in the supervisor's order (HostConfig.admissionKeys).
   * `now` is the clock of the release hold (tests pass their own). @default performance.now
   */
  constructor(
    port: AdmissionEndpoint<AdmissionGrantMessage, AdmissionRequestMessage>,
    keys: readonly string[],
    now: () => number = () => performance.now(),
  ) {
    this.#port = port;
    this.#now = now;
    this.#keyIndex = new Map(keys.map((key, index) => [key, index]));
    this.#requests = new TicketedRequests<number>({
      flush: (withdrawn) => this.#flush(withdrawn),
      firstUnsent: () => this.#acquires[0],
      // A sent request may wait on the supervisor or be granted already: a cancel covers both.
      cancelSent: (ticket) => this.#cancels.push(ticket),
      settleAborted: (settle, reason) => settle.reject(reason),
    });
    port.on('message', (message) => this.#onGrants(message));
  }

  /** Whether requests on `providerKey` need a slot; other keys skip the round trip. */
  limits(providerKey: string): boolean {
    return this.#keyIndex.has(providerKey);
  }

  /** Requests waiting for a grant (for tests and diagnostics). */
  get waiting(): number {
    return this.#requests.waiting;
  }

  /**
   * Resolves with a grant id once the supervisor admits a request on `providerKey`; rejects with
   * `signal.reason` if the signal aborts first, and then no slot stays taken.
   */
  acquire(
    providerKey: string,
    priority: number,
    estimatedTokens: number,
    signal: AbortSignal,
  ): Promise<number> {
    const keyIndex = this.#keyIndex.get(providerKey);
    if (keyIndex === undefined) {
      return Promise.reject(
        new SystemError('unknown_admission_key', `Provider key ${providerKey} has no admission limits`, {
          provider: providerKey,
        }),
      );
    }
    if (signal.aborted) return Promise.reject(signal.reason);
    const ticket = this.#requests.nextTicket();
    this.#acquires.push(ticket, keyIndex, priority, estimatedTokens);
    const granted = this.#requests.wait(ticket, signal);
    if (this.#releases.length > 0 && this.#held()) this.#requests.flushNow();
    return granted;
  }

  /**
   * Gives a slot back: sent at the end of the turn, or at once (with everything else queued) when
   * an earlier release of this turn has waited {@link ADMISSION_RELEASE_HOLD_MS} by the time of
   * this release or of an acquire.
   */
  release(grantId: number): void {
    this.#releases.push(grantId);
    if (this.#releases.length === 1) this.#heldSince = this.#now();
    else if (this.#held()) {
      this.#requests.flushNow();
      return;
    }
    this.#requests.schedule();
  }

  /** Whether the oldest release not sent yet has waited its longest. */
  #held(): boolean {
    return this.#now() - this.#heldSince >= ADMISSION_RELEASE_HOLD_MS;
  }

  #onGrants(message: AdmissionGrantMessage): void {
    const { grants } = message;
    for (let i = 0; i + 1 < grants.length; i += 2) {
      const grantId = grants[i + 1] ?? 0;
      // Not answered: the request was aborted while this grant was on its way.
      if (!this.#requests.answer(grants[i] ?? 0, grantId)) this.release(grantId);
    }
  }

  #flush(withdrawn: ReadonlySet<number>): void {
    const acquires =
      withdrawn.size === 0
        ? this.#acquires
        : withoutWithdrawn(this.#acquires, ADMISSION_ACQUIRE_STRIDE, withdrawn).batch;
    const releases = this.#releases;
    const cancels = this.#cancels;
    this.#acquires = [];
    this.#releases = [];
    this.#cancels = [];
    if (acquires.length === 0 && releases.length === 0 && cancels.length === 0) return;
    this.#port.postMessage({ type: 'admission', acquires, releases, cancels });
  }
}
