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

/**
 * A wait for its answer. It is its own abort listener (`handleEvent`), as admission's waiters are:
 * cheaper than a closure added with `{ once: true }`.
 */
class Waiter {
  readonly ticket: number;
  readonly signal: AbortSignal;
  readonly resolve: (text: string | null) => void;
  readonly #onAbort: (waiter: Waiter) => void;

  constructor(
    ticket: number,
    signal: AbortSignal,
    resolve: (text: string | null) => void,
    onAbort: (waiter: Waiter) => void,
  ) {
    this.ticket = ticket;
    this.signal = signal;
    this.resolve = resolve;
    this.#onAbort = onAbort;
  }

  handleEvent(): void {
    this.#onAbort(this);
  }
}

/** Asks the supervisor for instructions over a raw port. */
export class InboxClient {
  readonly #port: AdmissionEndpoint<InstructionDeliveryMessage, InboxRequestMessage>;
  readonly #waiting = new Map<number, Waiter>();
  readonly #onAbort = (waiter: Waiter): void => this.#abort(waiter);
  #nextTicket = 1;
  #waits: number[] = [];
  #agents: string[] = [];
  #abandons: number[] = [];
  /** Tickets abandoned before their wait was sent: left out of the next message. */
  readonly #withdrawn = new Set<number>();
  #flushScheduled = false;

  constructor(port: AdmissionEndpoint<InstructionDeliveryMessage, InboxRequestMessage>) {
    this.#port = port;
    port.on('message', (message) => this.#onDelivery(message));
  }

  /** Waits not answered yet (for tests and diagnostics). */
  get waiting(): number {
    return this.#waiting.size;
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
    const ticket = this.#nextTicket++;
    this.#waits.push(ticket, index, timeoutMs ?? INBOX_NO_TIMEOUT);
    this.#agents.push(agentId);
    this.#schedule();
    return new Promise<string | null>((resolve) => {
      const waiter = new Waiter(ticket, signal, resolve, this.#onAbort);
      this.#waiting.set(ticket, waiter);
      signal.addEventListener('abort', waiter);
    });
  }

  #abort(waiter: Waiter): void {
    const { ticket } = waiter;
    waiter.signal.removeEventListener('abort', waiter);
    if (!this.#waiting.delete(ticket)) return;
    // Tickets rise and the unsent ones are the newest: an unsent wait is simply left out.
    const firstUnsent = this.#waits[0];
    if (firstUnsent !== undefined && ticket >= firstUnsent) {
      this.#withdrawn.add(ticket);
    } else {
      this.#abandons.push(ticket);
      this.#schedule();
    }
    waiter.resolve(null);
  }

  #onDelivery(message: InstructionDeliveryMessage): void {
    const waiter = this.#waiting.get(message.ticket);
    // Undefined: the wait was abandoned while its answer was on the way.
    if (waiter === undefined) return;
    this.#waiting.delete(message.ticket);
    waiter.signal.removeEventListener('abort', waiter);
    waiter.resolve(message.text);
  }

  #schedule(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    // Parking is not the latency path (the delivery is): waits asked in one turn share a message.
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#flushScheduled = false;
    let waits = this.#waits;
    let agents = this.#agents;
    const abandons = this.#abandons;
    this.#waits = [];
    this.#agents = [];
    this.#abandons = [];
    if (this.#withdrawn.size > 0) [waits, agents] = this.#withoutWithdrawn(waits, agents);
    if (waits.length === 0 && abandons.length === 0) return;
    this.#port.postMessage({ type: 'inbox', waits, agents, abandons });
  }

  #withoutWithdrawn(waits: readonly number[], agents: readonly string[]): [number[], string[]] {
    const keptWaits: number[] = [];
    const keptAgents: string[] = [];
    for (let i = 0, n = 0; i < waits.length; i += INBOX_WAIT_STRIDE, n += 1) {
      if (this.#withdrawn.has(waits[i] ?? 0)) continue;
      keptWaits.push(...waits.slice(i, i + INBOX_WAIT_STRIDE));
      keptAgents.push(agents[n] ?? '');
    }
    this.#withdrawn.clear();
    return [keptWaits, keptAgents];
  }
}
