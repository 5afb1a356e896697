/**
 * The supervisor's end of one host's admission port: takes the host's batched acquires, releases
 * and cancels into the shared {@link Admission}, and sends grants back batched, one message per
 * event-loop turn. Remembers every ticket and grant of its host, so a host that dies gives back
 * all it held or waited for.
 */
import {
  ADMISSION_ACQUIRE_STRIDE,
  type AdmissionEndpoint,
  type AdmissionGrantMessage,
  type AdmissionRequestMessage,
} from '../../protocol/messages.ts';
import type { Admission, SlotRequest } from './admission.ts';

/** Serves one host's admission port. */
export class AdmissionServer {
  readonly #admission: Admission;
  readonly #port: AdmissionEndpoint<AdmissionRequestMessage, AdmissionGrantMessage>;
  readonly #keys: readonly string[];
  /** Tickets of this host that wait for a slot. */
  readonly #waiting = new Map<number, SlotRequest>();
  /** Slots this host holds: grant id -> ticket. */
  readonly #held = new Map<number, number>();
  /** The grant of each ticket that holds a slot, for a cancel that crossed its grant. */
  readonly #grantOf = new Map<number, number>();
  /** Grants not sent yet: ticket, grant id pairs. */
  #outgoing: number[] = [];
  #flushScheduled = false;
  #closed = false;

  /** `keys` are the limited provider keys as the host knows them (HostConfig.admissionKeys). */
  constructor(
    admission: Admission,
    keys: readonly string[],
    port: AdmissionEndpoint<AdmissionRequestMessage, AdmissionGrantMessage>,
  ) {
    this.#admission = admission;
    this.#keys = keys;
    this.#port = port;
    port.on('message', (message) => this.handle(message));
  }

  /** Slots the host holds now (for tests and diagnostics). */
  get held(): number {
    return this.#held.size;
  }

  /** Tickets of the host that wait for a slot now. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /**
   * Applies one batch: cancels first (a release may start a waiting request at once, and should
   * not pick one that gave up), then releases, then new acquires.
   */
  handle(message: AdmissionRequestMessage): void {
    if (this.#closed) return;
    for (const ticket of message.cancels) this.#cancel(ticket);
    for (const grantId of message.releases) this.#release(grantId);
    const { acquires } = message;
    for (let i = 0; i + ADMISSION_ACQUIRE_STRIDE <= acquires.length; i += ADMISSION_ACQUIRE_STRIDE) {
      const ticket = acquires[i] ?? 0;
      // An index the supervisor never gave out names no limited key: admitted at once.
      const key = this.#keys[acquires[i + 1] ?? -1] ?? '';
      const request = this.#admission.acquire(key, acquires[i + 2] ?? 0, acquires[i + 3] ?? 0, (grantId) =>
        this.#granted(ticket, grantId),
      );
      // A free slot is granted inside acquire(), before there is anything to remember.
      if (!request.granted) this.#waiting.set(ticket, request);
    }
  }

  /**
   * The host is gone: drops its waiting tickets and releases its slots, so the limits it took
   * go to other hosts. Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    // Cancel before releasing: a release can start a waiting request of this very host.
    for (const request of this.#waiting.values()) request.cancel();
    this.#waiting.clear();
    for (const grantId of this.#held.keys()) this.#admission.release(grantId);
    this.#held.clear();
    this.#grantOf.clear();
    this.#outgoing = [];
  }

  #granted(ticket: number, grantId: number): void {
    this.#waiting.delete(ticket);
    if (this.#closed) {
      this.#admission.release(grantId);
      return;
    }
    this.#held.set(grantId, ticket);
    this.#grantOf.set(ticket, grantId);
    this.#outgoing.push(ticket, grantId);
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    // Grants made in one turn (a batch of acquires, the releases that free room) go as one message.
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (this.#closed || this.#outgoing.length === 0) return;
    const grants = this.#outgoing;
    this.#outgoing = [];
    this.#port.postMessage({ type: 'grants', grants });
  }

  #release(grantId: number): void {
    const ticket = this.#held.get(grantId);
    if (ticket === undefined) return;
    this.#held.delete(grantId);
    this.#grantOf.delete(ticket);
    this.#admission.release(grantId);
  }

  #cancel(ticket: number): void {
    const request = this.#waiting.get(ticket);
    if (request !== undefined) {
      this.#waiting.delete(ticket);
      request.cancel();
      return;
    }
    // Granted before the cancel arrived: the grant is on its way to a request that gave up.
    const grantId = this.#grantOf.get(ticket);
    if (grantId !== undefined) this.#release(grantId);
  }
}
