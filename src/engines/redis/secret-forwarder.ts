/**
 * A worker's side of the `secrets` signal: every credential registered for masking in this worker's
 * thread (its providers' keys, a tool module's or provider's `registerSecretValues`, whatever copy
 * of troupe registers it) is sent, sealed (secret-box.ts), to each supervisor that runs an agent
 * here: at the start of its first run, then as each is registered while it runs one. A supervisor
 * writes results.jsonl, summary.json and the CLI's output from the agents' results in its own
 * process, where these values would otherwise never be masked.
 *
 * Bounds: the thread holds at most MAX_LITERAL_SECRETS values (redact.ts refuses more); a value
 * longer than MAX_FORWARDED_SECRET_CHARS is not sent; a signal carries at most SECRETS_PER_SIGNAL
 * values; at most MAX_SECRET_SUPERVISORS supervisors are remembered.
 */
import { onSecretValues } from '../../journal/redact.ts';
import type { AgentJobData, SealedSecrets } from '../../protocol/redis.ts';
import { MAX_FORWARDED_SECRET_CHARS, MAX_SECRET_SUPERVISORS, SECRETS_PER_SIGNAL } from './constants.ts';
import { sealSecrets } from './secret-box.ts';
import type { SignalSender } from './signals.ts';

/** What a worker knows of one supervisor it sends credentials to. */
interface Recipient {
  /** Its public key, from its latest job. */
  key: string;
  /** How many of the values (a prefix) it was sent. */
  sent: number;
  /** Its runs on this worker now. */
  runs: number;
  /** An agent of it running here, to name in the signal. */
  agentId: string;
}

export class SecretForwarder {
  readonly #signals: SignalSender;
  /** Every value registered in this thread that can be sent, in the order registered. */
  readonly #values: string[] = [];
  readonly #recipients = new Map<string, Recipient>();
  readonly #unsubscribe: () => void;

  constructor(signals: SignalSender) {
    this.#signals = signals;
    // Called at once with the values registered so far, then with each registration's.
    this.#unsubscribe = onSecretValues((values) => {
      for (const value of values) if (value.length <= MAX_FORWARDED_SECRET_CHARS) this.#values.push(value);
      for (const [supervisorId, recipient] of this.#recipients) {
        if (recipient.runs > 0) this.#send(supervisorId, recipient);
      }
    });
  }

  /** A run of `data`'s agent starts here: its supervisor gets the values it was not sent yet. */
  started(data: AgentJobData): void {
    const key = data.secretsKey;
    if (typeof key !== 'string') return;
    const { supervisorId } = data;
    let recipient = this.#recipients.get(supervisorId);
    if (recipient === undefined) {
      if (this.#recipients.size >= MAX_SECRET_SUPERVISORS) this.#forgetOne();
      recipient = { key, sent: 0, runs: 0, agentId: data.agent.agentId };
      this.#recipients.set(supervisorId, recipient);
    } else if (recipient.key !== key) {
      // Another process under the same id (it cannot be, ids are random): it knows none of them.
      recipient.key = key;
      recipient.sent = 0;
    }
    recipient.runs += 1;
    recipient.agentId = data.agent.agentId;
    this.#send(supervisorId, recipient);
  }

  /** The run of `data`'s agent on this worker ended (or parked). */
  ended(data: AgentJobData): void {
    const recipient = this.#recipients.get(data.supervisorId);
    if (recipient !== undefined && typeof data.secretsKey === 'string') recipient.runs -= 1;
  }

  /** Stops listening for registrations. */
  close(): void {
    this.#unsubscribe();
  }

  /** Never throws: it runs inside whatever registered the values (a provider being built). */
  #send(supervisorId: string, recipient: Recipient): void {
    while (recipient.sent < this.#values.length) {
      const values = this.#values.slice(recipient.sent, recipient.sent + SECRETS_PER_SIGNAL);
      recipient.sent += values.length;
      let sealed: SealedSecrets;
      try {
        sealed = sealSecrets(recipient.key, values);
      } catch {
        // Not an X25519 key (a foreign job): nothing can be sealed for it.
        recipient.sent = this.#values.length;
        return;
      }
      this.#signals.send(supervisorId, { type: 'secrets', agentId: recipient.agentId, sealed });
    }
  }

  /** Forgets the first supervisor met that runs nothing here (the first met, if all do). */
  #forgetOne(): void {
    for (const [supervisorId, recipient] of this.#recipients) {
      if (recipient.runs === 0) {
        this.#recipients.delete(supervisorId);
        return;
      }
    }
    const oldest = this.#recipients.keys().next();
    if (oldest.done !== true) this.#recipients.delete(oldest.value);
  }
}
