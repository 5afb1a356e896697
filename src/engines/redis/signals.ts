/**
 * Signals: what workers tell the supervisor that spawned an agent, over a Redis Stream per
 * supervisor (src/protocol/redis.ts `WorkerSignal`): the agent signals actor hosts send over their
 * events port plus the scale-out ones. They are best effort (trimmed,
 * lost with a dead supervisor): outcomes are read from BullMQ job state, never from a signal.
 */
import type { Redis } from 'ioredis';
import type { WorkerSignal } from '../../protocol/redis.ts';
import { SIGNAL_STREAM_MAX_LENGTH, STREAM_IDLE_TTL_MS } from './constants.ts';
import type { ScaleoutKeys } from './keys.ts';

/** Batches signals per supervisor and appends each batch as one stream entry. */
export class SignalSender {
  readonly #redis: Redis;
  readonly #keys: ScaleoutKeys;
  readonly #pending = new Map<string, WorkerSignal[]>();
  #scheduled = false;

  constructor(redis: Redis, keys: ScaleoutKeys) {
    this.#redis = redis;
    this.#keys = keys;
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
      this.#redis
        .xadd(key, 'MAXLEN', '~', SIGNAL_STREAM_MAX_LENGTH, '*', 'm', JSON.stringify(signals))
        .catch(ignore);
      this.#redis.pexpire(key, STREAM_IDLE_TTL_MS).catch(ignore);
    }
    this.#pending.clear();
  }
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
