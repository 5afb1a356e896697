/**
 * Events an engine raises about itself rather than about one agent: its threads, and provider
 * pauses. The Supervisor re-emits them unchanged among its own events.
 */
import type { SerializedError } from '../errors.ts';

/**
 * `thread:started` and `thread:respawned`: a worker thread of the threads engine started, or one
 * replacing a dead thread did.
 */
export interface ThreadEvent {
  /** The thread's number (as in `agent:started`'s `hostId`). */
  readonly hostId: number;
}
/** `thread:crashed`: a worker thread died; its agents restart on another thread or fail (threads engine). */
export interface ThreadCrashed extends ThreadEvent {
  readonly cause: SerializedError;
  /** Ids of the agents that were running on it. */
  readonly agents: readonly string[];
}
/**
 * `provider:backoff`: a provider answered 429, so no agent of the supervisor starts a request on it
 * for `retryAfterMs` (capped at 5 minutes).
 */
export interface ProviderBackoff {
  /** The provider key (the provider name). */
  readonly provider: string;
  readonly retryAfterMs: number;
}
/** An agent's provider request waited out a 429 pause set by some agent on some worker (redis engine). */
export interface ProviderPaused {
  readonly agentId: string;
  readonly provider: string;
  /** The worker the waiting agent runs on. */
  readonly hostId: number;
  readonly waitMs: number;
}

/**
 * A supervisor's agent jobs have waited `waitedMs` and none was taken: no worker serves the queue,
 * or every one is busy with other supervisors' jobs (redis engine). Emitted once until an agent
 * starts again.
 */
export interface JobsUnserved {
  /** Jobs added and not taken. */
  readonly waiting: number;
  readonly waitedMs: number;
  /** Workers of the queue heard from lately. */
  readonly workers: number;
  /** The Redis URL, its password masked. */
  readonly url: string;
  readonly queue: string;
  readonly prefix: string;
}

/** Event names and payloads an engine emits through {@link EngineHost.emit}. */
export interface EngineEvents {
  'thread:started': [event: ThreadEvent];
  'thread:crashed': [event: ThreadCrashed];
  'thread:respawned': [event: ThreadEvent];
  'provider:backoff': [event: ProviderBackoff];
  'provider:paused': [event: ProviderPaused];
  'jobs:unserved': [event: JobsUnserved];
}
