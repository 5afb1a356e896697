/**
 * The host's end of its inbox port: an agent's `wait_for_instruction` asks the supervisor for
 * instruction number n here. Waits asked in one event-loop turn go up as one message (the actor
 * host carries it in its events batch: see the constructor); each answer
 * comes down as its own message, as soon as the supervisor has it. An agent's tool call waiting for
 * approval asks for the decision on its request here too, one message each (they are rare).
 */
import type { ApprovalDecision, ApprovalRequest } from '../src/protocol/approvals.ts';
import {
  type AdmissionEndpoint,
  INBOX_NO_TIMEOUT,
  INBOX_WAIT_STRIDE,
  type InboxDownMessage,
  type InboxRequestMessage,
  type InboxUpMessage,
} from '../src/protocol/messages.ts';
import { TicketedRequests, withoutWithdrawn } from './ticketed-requests.ts';

/** Asks the supervisor for instructions over a raw port. */
interface DecisionWait {
  readonly resolve: (decision: ApprovalDecision | null) => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}

export class InboxClient {
  readonly #port: AdmissionEndpoint<InboxDownMessage, InboxUpMessage>;
  readonly #requests: TicketedRequests<string | null>;
  /** Approval waits by ticket (their own numbering: the supervisor keeps them apart from instruction waits). */
  readonly #decisions = new Map<number, DecisionWait>();
  #nextDecisionTicket = 1;
  #waits: number[] = [];
  #agents: string[] = [];
  #abandons: number[] = [];
  readonly #carried: boolean;
  /** With a carrier: what the last flush gathered, for {@link take}. */
  #taken: InboxRequestMessage | undefined;

  /**
   * Without `carry`, waits asked in one turn go up as one message on the port at the end of the
   * turn. With it, `carry` is called whenever waits or abandons are queued, and whoever carries
   * them (the actor host, in its events batch) collects them with {@link take} later in that turn.
   */
  constructor(port: AdmissionEndpoint<InboxDownMessage, InboxUpMessage>, carry?: () => void) {
    this.#port = port;
    this.#carried = carry !== undefined;
    // Parking is not the latency path (the delivery is): waits asked in one turn share a message.
    this.#requests = new TicketedRequests<string | null>({
      flush: (withdrawn) => this.#flush(withdrawn),
      firstUnsent: () => this.#waits[0],
      cancelSent: (ticket) => this.#abandons.push(ticket),
      settleAborted: (settle) => settle.resolve(null),
      ...(carry ? { schedule: carry } : {}),
    });
    port.on('message', (message) => {
      // Not answered: the wait was abandoned while its answer was on the way.
      if (message.type === 'instruction') void this.#requests.answer(message.ticket, message.text);
      else this.#decided(message.ticket, message.decision);
    });
  }

  /** Waits not answered yet, instruction and approval waits (for tests and diagnostics). */
  get waiting(): number {
    return this.#requests.waiting + this.#decisions.size;
  }

  /**
   * Resolves with the decision on `request` (the supervisor hears of the request and decides), or
   * null when `signal` aborts (the supervisor is told to drop the wait) or the supervisor ends the
   * wait. Never rejects.
   */
  decision(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision | null> {
    if (signal.aborted) return Promise.resolve(null);
    const ticket = this.#nextDecisionTicket++;
    return new Promise((resolve) => {
      const onAbort = (): void => {
        if (!this.#decisions.delete(ticket)) return;
        this.#port.postMessage({ type: 'approval_abandon', ticket });
        resolve(null);
      };
      this.#decisions.set(ticket, { resolve, signal, onAbort });
      signal.addEventListener('abort', onAbort, { once: true });
      this.#port.postMessage({ type: 'approval', ticket, request });
    });
  }

  #decided(ticket: number, decision: ApprovalDecision | null): void {
    const wait = this.#decisions.get(ticket);
    if (wait === undefined) return;
    this.#decisions.delete(ticket);
    wait.signal.removeEventListener('abort', wait.onAbort);
    wait.resolve(decision);
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

  /**
   * The waits and abandons queued since the last call, as one message (undefined when there are
   * none), for a carrier to send in its own message. Only with a carrier.
   */
  take(): InboxRequestMessage | undefined {
    this.#requests.flushNow();
    const taken = this.#taken;
    this.#taken = undefined;
    return taken;
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
    const message: InboxRequestMessage = { type: 'inbox', waits, agents, abandons };
    if (this.#carried) this.#taken = message;
    else this.#port.postMessage(message);
  }
}
