/**
 * Signals: what workers tell the supervisor that spawned an agent, over a Redis Stream per
 * supervisor (src/protocol/redis.ts `WorkerSignal`): the agent signals actor hosts send over their
 * events port plus the scale-out ones. They are best effort (trimmed,
 * lost with a dead supervisor): outcomes are read from BullMQ job state, never from a signal.
 */
import type { Redis } from 'ioredis';
import { serializeError } from '../../errors.ts';
import type { SignalFailure, WorkerSignal } from '../../protocol/redis.ts';
import {
  MAX_SIGNAL_FAILURE_CHARS,
  MAX_STREAM_ENTRY_BYTES,
  SIGNAL_STREAM_MAX_LENGTH,
  STREAM_IDLE_TTL_MS,
} from './constants.ts';
import type { ScaleoutKeys } from './keys.ts';

/** Batches signals per supervisor and appends each batch as one stream entry. */
export class SignalSender {
  readonly #redis: Redis;
  readonly #keys: ScaleoutKeys;
  readonly #pending = new Map<string, WorkerSignal[]>();
  #scheduled = false;

  readonly #maxEntryBytes: number;

  /** `maxEntryBytes`: for tests. @default MAX_STREAM_ENTRY_BYTES */
  constructor(redis: Redis, keys: ScaleoutKeys, maxEntryBytes = MAX_STREAM_ENTRY_BYTES) {
    this.#redis = redis;
    this.#keys = keys;
    this.#maxEntryBytes = maxEntryBytes;
  }

  /** Queues `signal` for `supervisorId`; batches leave once per event-loop turn. */
  send(supervisorId: string, signal: WorkerSignal): void {
    let batch = this.#pending.get(supervisorId);
    if (!batch) {
      batch = [];
      this.#pending.set(supervisorId, batch);
    }
    batch.push(signal);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.flush());
  }

  /** Sends every queued batch now. */
  flush(): void {
    this.#scheduled = false;
    for (const [supervisorId, signals] of this.#pending) {
      const key = this.#keys.signals(supervisorId);
      // Plain commands, not an explicit pipeline: on the worker's auto-pipelined connection they
      // join the turn's auto-pipeline behind the journal's append call, which a commit queued
      // before the signal. An explicit pipeline is written at once, ahead of it: the signal reached
      // Redis before the events it reports.
      const ignore = (): void => {
        // Best effort: the supervisor reads outcomes from job state.
      };
      for (const entry of signalEntries(signals, this.#maxEntryBytes)) {
        this.#redis.xadd(key, 'MAXLEN', '~', SIGNAL_STREAM_MAX_LENGTH, '*', 'm', entry).catch(ignore);
      }
      this.#redis.pexpire(key, STREAM_IDLE_TTL_MS).catch(ignore);
    }
    this.#pending.clear();
  }
}

/**
 * `signals` as stream entries (JSON arrays) of at most `maxEntryBytes` each, which a supervisor
 * reads (supervisor-streams.ts). A signal larger on its own goes without what makes it large when
 * the supervisor can read that elsewhere (an `ended` signal's outcome: its batch's hash has it), and
 * is dropped otherwise (signals are best effort; the supervisor would refuse it and fail its agent).
 */
export function signalEntries(signals: readonly WorkerSignal[], maxEntryBytes: number): string[] {
  const entries: string[] = [];
  let parts: string[] = [];
  let bytes = 2;
  for (const signal of signals) {
    let text = JSON.stringify(signal);
    let size = Buffer.byteLength(text);
    if (size + 2 > maxEntryBytes && signal.type === 'ended' && signal.outcome !== undefined) {
      text = JSON.stringify({ type: 'ended', agentId: signal.agentId, failure: signal.failure });
      size = Buffer.byteLength(text);
    }
    if (size + 2 > maxEntryBytes) continue;
    if (parts.length > 0 && bytes + 1 + size > maxEntryBytes) {
      entries.push(`[${parts.join(',')}]`);
      parts = [];
      bytes = 2;
    }
    bytes += (parts.length > 0 ? 1 : 0) + size;
    parts.push(text);
  }
  if (parts.length > 0) entries.push(`[${parts.join(',')}]`);
  return entries;
}

/** The signals of one stream entry; malformed entries yield none. */
export function decodeSignals(text: string | undefined): WorkerSignal[] {
  if (text === undefined) return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(value)) return [];
  return value.filter(
    (item): item is WorkerSignal =>
      typeof item === 'object' &&
      item !== null &&
      typeof (item as { type?: unknown }).type === 'string' &&
      typeof (item as { agentId?: unknown }).agentId === 'string',
  );
}

/**
 * `error` as an `ended` signal carries it: its message cut at MAX_SIGNAL_FAILURE_CHARS, its fields
 * left out when their JSON is longer than that.
 */
export function signalFailure(error: unknown): SignalFailure {
  const { code, message, fields } = serializeError(error);
  return boundedFailure(code.slice(0, MAX_FAILURE_CODE_CHARS), message, fields);
}

/** The `failure` of an `ended` signal a supervisor read, when it is one (bounded as a worker sends it). */
export function readSignalFailure(value: unknown): SignalFailure | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { code, message, fields } = value as Partial<Record<keyof SignalFailure, unknown>>;
  if (typeof code !== 'string' || typeof message !== 'string') return undefined;
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return undefined;
  if (code === '' || code.length > MAX_FAILURE_CODE_CHARS) return undefined;
  return boundedFailure(code, message, fields as Record<string, unknown>);
}

/** Error codes are short slugs; a longer one is no error a worker sent. */
const MAX_FAILURE_CODE_CHARS = 200;

function boundedFailure(
  code: string,
  message: string,
  fields: Readonly<Record<string, unknown>>,
): SignalFailure {
  let fieldsJson: string | undefined;
  try {
    fieldsJson = JSON.stringify(fields);
  } catch {
    fieldsJson = undefined;
  }
  const keep = fieldsJson !== undefined && fieldsJson.length <= MAX_SIGNAL_FAILURE_CHARS;
  return {
    code,
    message:
      message.length > MAX_SIGNAL_FAILURE_CHARS
        ? `${message.slice(0, MAX_SIGNAL_FAILURE_CHARS)}...`
        : message,
    fields: keep ? fields : {},
  };
}
