/**
 * The supervisor's end of one host's inbox port: parks the host's instruction waits on the agents'
 * mailboxes and posts each answer back the moment it exists, one message per delivery (a delivery
 * is the latency path from `send()` to the agent, so it is never held for a batch). Approval waits
 * go the same way: each asks for the decision on one request, which is reported to the supervisor
 * and answered when the decision is delivered. Remembers every wait of its host, so a host that
 * dies leaves no wait parked.
 */
import type { ApprovalRequest } from '../../protocol/approvals.ts';
import {
  type AdmissionEndpoint,
  type ApprovalWaitMessage,
  INBOX_NO_TIMEOUT,
  INBOX_WAIT_STRIDE,
  type InboxDownMessage,
  type InboxRequestMessage,
  type InboxUpMessage,
} from '../../protocol/messages.ts';
import type { Deliver, DeliverDecision, Mailbox } from './mailbox.ts';

interface ParkedWait {
  readonly mailbox: Mailbox;
  readonly deliver: Deliver;
}

interface ParkedDecision {
  readonly mailbox: Mailbox;
  readonly deliver: DeliverDecision;
}

/** Serves one host's inbox port. */
export class InboxServer {
  readonly #port: AdmissionEndpoint<InboxUpMessage, InboxDownMessage>;
  readonly #mailboxOf: (agentId: string) => Mailbox | undefined;
  readonly #onApproval: (request: ApprovalRequest) => void;
  /** Waits of this host parked on a mailbox, by ticket. */
  readonly #parked = new Map<number, ParkedWait>();
  /** Approval waits of this host parked on a mailbox, by ticket. */
  readonly #deciding = new Map<number, ParkedDecision>();
  #closed = false;

  /**
   * `mailboxOf` gives the mailbox of a running agent, undefined for an agent that is not running
   * (its waits are answered null at once). `onApproval` hears every approval wait of a running
   * agent, before it parks.
   */
  constructor(
    port: AdmissionEndpoint<InboxUpMessage, InboxDownMessage>,
    mailboxOf: (agentId: string) => Mailbox | undefined,
    onApproval: (request: ApprovalRequest) => void = () => {},
  ) {
    this.#port = port;
    this.#mailboxOf = mailboxOf;
    this.#onApproval = onApproval;
    port.on('message', (message) => {
      if (message.type === 'inbox') this.handle(message);
      else this.#handleApproval(message);
    });
  }

  /** Waits of the host parked now, instruction and approval waits (for tests and diagnostics). */
  get parked(): number {
    return this.#parked.size + this.#deciding.size;
  }

  /**
   * Applies one batch: abandons first (a wait asked again in the same turn replaces the one given
   * up, never the other way round), then new waits.
   */
  handle(message: InboxRequestMessage): void {
    if (this.#closed) return;
    for (const ticket of message.abandons) this.#abandon(ticket);
    const { waits, agents } = message;
    for (let i = 0, n = 0; i + INBOX_WAIT_STRIDE <= waits.length; i += INBOX_WAIT_STRIDE, n += 1) {
      const ticket = waits[i] ?? 0;
      const timeoutMs = waits[i + 2] ?? INBOX_NO_TIMEOUT;
      this.#wait(
        ticket,
        agents[n] ?? '',
        waits[i + 1] ?? 0,
        timeoutMs === INBOX_NO_TIMEOUT ? undefined : timeoutMs,
      );
    }
  }

  /** The host is gone: withdraws its parked waits, unanswered. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const { mailbox, deliver } of this.#parked.values()) mailbox.withdraw(deliver);
    this.#parked.clear();
    for (const { mailbox, deliver } of this.#deciding.values()) mailbox.withdrawDecision(deliver);
    this.#deciding.clear();
  }

  #handleApproval(message: ApprovalWaitMessage): void {
    if (this.#closed) return;
    const { ticket } = message;
    if (message.type === 'approval_abandon') {
      const parked = this.#deciding.get(ticket);
      if (parked === undefined) return;
      this.#deciding.delete(ticket);
      parked.mailbox.withdrawDecision(parked.deliver);
      return;
    }
    const { request } = message;
    const mailbox = this.#mailboxOf(request.agentId);
    if (mailbox === undefined) {
      this.#port.postMessage({ type: 'decision', ticket, decision: null });
      return;
    }
    const deliver: DeliverDecision = (decision) => {
      this.#deciding.delete(ticket);
      if (!this.#closed) this.#port.postMessage({ type: 'decision', ticket, decision });
    };
    this.#deciding.set(ticket, { mailbox, deliver });
    // Reported unless already decided: a decision can only have come from a report seen earlier.
    if (!mailbox.decided(request.requestId)) this.#onApproval(request);
    mailbox.awaitDecision(request.requestId, deliver);
  }

  #wait(ticket: number, agentId: string, index: number, timeoutMs: number | undefined): void {
    const mailbox = this.#mailboxOf(agentId);
    if (mailbox === undefined) {
      this.#post(ticket, null);
      return;
    }
    const deliver: Deliver = (text) => {
      this.#parked.delete(ticket);
      if (!this.#closed) this.#post(ticket, text);
    };
    // Remembered first: an instruction already in the log is delivered inside park().
    this.#parked.set(ticket, { mailbox, deliver });
    mailbox.park(index, timeoutMs, deliver);
  }

  #abandon(ticket: number): void {
    const parked = this.#parked.get(ticket);
    if (parked === undefined) return;
    this.#parked.delete(ticket);
    parked.mailbox.withdraw(parked.deliver);
  }

  #post(ticket: number, text: string | null): void {
    this.#port.postMessage({ type: 'instruction', ticket, text });
  }
}
