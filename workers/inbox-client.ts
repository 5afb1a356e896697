/**
 * The host's end of its inbox port: an agent's `wait_for_instruction` asks the supervisor for
 * instruction number n here. Waits asked in one event-loop turn go up as one message; each answer
 * comes down as its own message, as soon as the supervisor has it.
 */
import {
  type AdmissionEndpoint,
  INBOX_NO_TIMEOUT,
  INBOX_WAIT_STRIDE,
  type InboxRequestMessage,
  type InstructionDeliveryMessage,
} from '../src/protocol/messages.ts';
import { TicketedRequests, withoutWithdrawn } from './ticketed-requests.ts';

/** Asks the supervisor for instructions over a raw port. */
export class InboxClient {
  readonly #port: AdmissionEndpoint<InstructionDeliveryMessage, InboxRequestMessage>;
  readonly #requests: TicketedRequests<string | null>;
  #waits: number[] = [];
  #agents: string[] = [];
  #abandons: number[] = [];

  constructor(port: AdmissionEndpoint<InstructionDeliveryMessage, InboxRequestMessage>) {
    this.#port = port;
    // Parking is not the latency path (the delivery is): waits asked in one turn share a message.
    this.#requests = new TicketedRequests<string | null>({
      flush: (withdrawn) => this.#flush(withdrawn),
      firstUnsent: () => this.#waits[0],
      cancelSent: (ticket) => this.#abandons.push(ticket),
      settleAborted: (settle) => settle.resolve(null),
    });
    // Not answered: the wait was abandoned while its answer was on the way.
    port.on('message', (message) => void this.#requests.answer(message.ticket, message.text));
  }

  /** Waits not answered yet (for tests and diagnostics). */
  get waiting(): number {
    return this.#requests.waiting;
  }

  /**
   * Resolves with instruction number `index` of `agentId` (0-based), or null after `timeoutMs`
   * (undefined = no limit), or null at once when `signal` aborts (the supervisor is told to drop
   * the wait). Never rejects.
   */
  wait(
    agentId: string,
    index: number,
    timeoutMs: number | undefined,
    signal: AbortSignal,
  ): Promise<string | null> {
    if (signal.aborted) return Promise.resolve(null);
    const ticket = this.#requests.nextTicket();
    this.#waits.push(ticket, index, timeoutMs ?? INBOX_NO_TIMEOUT);
    this.#agents.push(agentId);
    return this.#requests.wait(ticket, signal);
  }

  #flush(withdrawn: ReadonlySet<number>): void {
    let waits = this.#waits;
    let agents = this.#agents;
    const abandons = this.#abandons;
    this.#waits = [];
    this.#agents = [];
    this.#abandons = [];
    if (withdrawn.size > 0) {
      const kept = withoutWithdrawn(waits, INBOX_WAIT_STRIDE, withdrawn, agents);
      waits = kept.batch;
      agents = kept.parallel;
    }
    if (waits.length === 0 && abandons.length === 0) return;
    this.#port.postMessage({ type: 'inbox', waits, agents, abandons });
  }
}
