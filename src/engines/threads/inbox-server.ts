/**
 * The supervisor's end of one host's inbox port: parks the host's instruction waits on the agents'
 * mailboxes and posts each answer back the moment it exists, one message per delivery (a delivery
 * is the latency path from `send()` to the agent, so it is never held for a batch). Remembers every
 * wait of its host, so a host that dies leaves no wait parked.
 */
import {
  type AdmissionEndpoint,
  INBOX_NO_TIMEOUT,
  INBOX_WAIT_STRIDE,
  type InboxRequestMessage,
  type InstructionDeliveryMessage,
} from '../../protocol/messages.ts';
import type { Deliver, Mailbox } from './mailbox.ts';

interface ParkedWait {
  readonly mailbox: Mailbox;
  readonly deliver: Deliver;
}

/** Serves one host's inbox port. */
export class InboxServer {
  readonly #port: AdmissionEndpoint<InboxRequestMessage, InstructionDeliveryMessage>;
  readonly #mailboxOf: (agentId: string) => Mailbox | undefined;
  /** Waits of this host parked on a mailbox, by ticket. */
  readonly #parked = new Map<number, ParkedWait>();
  #closed = false;

  /**
   * `mailboxOf` gives the mailbox of a running agent, undefined for an agent that is not running
   * (its waits are answered null at once).
   */
  constructor(
    port: AdmissionEndpoint<InboxRequestMessage, InstructionDeliveryMessage>,
    mailboxOf: (agentId: string) => Mailbox | undefined,
  ) {
    this.#port = port;
    this.#mailboxOf = mailboxOf;
    port.on('message', (message) => this.handle(message));
  }

  /** Waits of the host parked now (for tests and diagnostics). */
  get parked(): number {
    return this.#parked.size;
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
