/** Where the loop sends its audit events, and an in-memory journal. */
import { type ChainHead, chainEvent, EMPTY_HEAD, headAfter, storedLine } from './chain.ts';
import type { AuditEvent, AuditEventInput } from './events.ts';

/**
 * Receives an agent's audit events in order. The loop depends only on this: a {@link JournalWriter}
 * (file), a {@link MemoryJournal}, or a runner's own sink that forwards bodies elsewhere (the
 * chain fields are then added wherever the events are finally stored).
 */
export interface JournalSink {
  append(event: AuditEventInput): void;
  /**
   * Stores the events appended so far before the caller goes on, for a sink that holds them in
   * memory between calls (a batching {@link JournalWriter}); absent or a no-op for one that stores
   * each at once. The loop calls it before every side effect: a model request, a tool's start, a
   * wait for an instruction, a person or a user, and its end.
   */
  commit?(): void;
  /**
   * Resolves once every event appended so far is stored (a sink that stores asynchronously, such as
   * a Redis stream); absent for sinks that store synchronously. Awaited before an approved tool runs.
   */
  flushed?(): Promise<void>;
}

/** Options of {@link MemoryJournal}. */
export interface MemoryJournalOptions {
  /** Events to continue from (e.g. a journal read from disk); the chain resumes after the last. */
  readonly events?: readonly AuditEvent[];
  /** Clock for `ts`. @default () => new Date() */
  readonly now?: () => Date;
}

/** A journal held in memory: the same events a file journal would hold, without the file. */
export class MemoryJournal implements JournalSink {
  readonly #events: AuditEvent[];
  readonly #now: (() => Date) | undefined;
  #head: ChainHead;

  constructor(options: MemoryJournalOptions = {}) {
    this.#events = [...(options.events ?? [])];
    this.#now = options.now;
    const last = this.#events.at(-1);
    this.#head = last ? headAfter(last) : EMPTY_HEAD;
  }

  /** The events so far, oldest first. */
  get events(): readonly AuditEvent[] {
    return this.#events;
  }

  /** Chains, redacts and stores `input`; returns the stored event. */
  append(input: AuditEventInput): AuditEvent {
    const { event, head } = chainEvent(input, this.#head, this.#now);
    this.#events.push(event);
    this.#head = head;
    return event;
  }

  /** The same as {@link append} (named like `JournalWriter.appendEvent`, for code taking either). */
  appendEvent(input: AuditEventInput): AuditEvent {
    return this.append(input);
  }

  /** The journal as JSONL text, exactly as a {@link JournalWriter} would have written it. */
  toJsonl(): string {
    return this.#events.map((event) => `${storedLine(event)}\n`).join('');
  }
}
