/**
 * Redis key layout of one queue. BullMQ owns `<prefix>:<queue>:<jobId>` and the keys below it;
 * troupe's per-agent keys live under `<prefix>:<queue>:agent:<agentId>:*`, which cannot collide
 * with BullMQ's because agent ids contain no colon. Provider limits are shared by every queue on
 * the server: `<prefix>:limit:<providerKey>:*`.
 */
import { describeValue, UserError } from '../../errors.ts';

/** Agent ids: BullMQ job ids and key segments, so no colon and no whitespace. */
export const AGENT_ID_PATTERN = /^[A-Za-z0-9_.@-]{1,200}$/;

/** Throws UserError `invalid_agent_id` unless `id` can be a job id and a key segment. */
export function checkAgentId(id: string): void {
  if (!AGENT_ID_PATTERN.test(id)) {
    throw new UserError(
      'invalid_agent_id',
      `Expected an agent id of 1-200 letters, digits, '_', '.', '@' or '-', got ${describeValue(id)}`,
      { agentId: id },
    );
  }
}

const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,100}$/;

/** Throws UserError `invalid_option` unless `value` is a usable queue name or key prefix. */
export function checkName(option: string, value: string): string {
  if (!NAME_PATTERN.test(value)) {
    throw new UserError(
      'invalid_option',
      `Expected \`${option}\` to be 1-100 letters, digits, '_', '.' or '-', got ${describeValue(value)}`,
      { option },
    );
  }
  return value;
}

/** The heartbeat key of the supervisor whose request stream is `requests` (`...:supervisor:<id>:alive`). */
export function supervisorAliveOf(requests: string): string {
  return `${requests.replace(/:requests$/, '')}:alive`;
}

/** The journal registry's keys of one queue (see {@link ScaleoutKeys.journals}). */
export interface JournalRegistryKeys {
  readonly registry: string;
  readonly seq: string;
  readonly expiring: string;
}

/** The registry keys of the queue whose keys begin `<prefix>:<queue>` (`base`). */
function journalRegistryKeys(base: string): JournalRegistryKeys {
  const registry = `${base}:~journals`;
  return { registry, seq: `${registry}:seq`, expiring: `${registry}:expiring` };
}

/** `<prefix>:<queue>:agent:<agentId>:journal`, read back (a fork's draft, `...:journal:fork`, is not one). */
const JOURNAL_KEY = /^(.+):agent:([A-Za-z0-9_.@-]{1,200}):journal$/;

/**
 * The registry a journal stream `key` is entered in as it is created, and its entry (the agent
 * id); undefined for a key that is not an agent's journal (a fork's draft). Every writer of a
 * journal stream derives it from the key, so a stream is registered whoever creates it.
 */
export function journalRegistryOf(
  key: string,
): (JournalRegistryKeys & { readonly member: string }) | undefined {
  const match = JOURNAL_KEY.exec(key);
  if (match === null) return undefined;
  return { ...journalRegistryKeys(match[1] as string), member: match[2] as string };
}

/** Key names for one prefix and queue. */
export class ScaleoutKeys {
  readonly prefix: string;
  readonly queue: string;

  constructor(prefix: string, queue: string) {
    this.prefix = prefix;
    this.queue = queue;
  }

  #agent(agentId: string, kind: string): string {
    return `${this.prefix}:${this.queue}:agent:${agentId}:${kind}`;
  }

  /** The agent's audit journal: a stream, entry id `<seq + 1>-0`. */
  journal(agentId: string): string {
    return this.#agent(agentId, 'journal');
  }

  /**
   * The queue's registry of journal streams: a sorted set, agent id -> the number its stream got
   * as it was created (from {@link journalsSeq}, so in creation order). A `~` segment: no job id
   * (an agent id) holds one, so no BullMQ key collides. See journal-registry.ts.
   */
  get journals(): string {
    return journalRegistryKeys(`${this.prefix}:${this.queue}`).registry;
  }

  /** The counter numbering the queue's journal streams as they are created ({@link journals}). */
  get journalsSeq(): string {
    return journalRegistryKeys(`${this.prefix}:${this.queue}`).seq;
  }

  /**
   * Journal streams given a TTL (`retainSeconds`): a sorted set, agent id -> when it expires (ms),
   * so their {@link journals} entries go once they have (journal-registry.ts).
   */
  get journalsExpiring(): string {
    return journalRegistryKeys(`${this.prefix}:${this.queue}`).expiring;
  }

  /** The agent's instruction inbox: a stream, entry id `<index + 1>-0`. */
  inbox(agentId: string): string {
    return this.#agent(agentId, 'inbox');
  }

  /** How many instructions the agent has asked for: one more than the highest number a wait asked for. */
  inboxAsked(agentId: string): string {
    return this.#agent(agentId, 'asked');
  }

  /** Present while the agent's job is parked waiting for instruction `index` (JSON). */
  parked(agentId: string): string {
    return this.#agent(agentId, 'parked');
  }

  /** Decisions on the agent's approval requests: a hash, request id -> decision (JSON); the first wins. */
  decisions(agentId: string): string {
    return this.#agent(agentId, 'decisions');
  }

  /** Wake-ups of an agent waiting for a decision: a stream, one entry per decision (field `r`: request id). */
  decisionWakeups(agentId: string): string {
    return this.#agent(agentId, 'decided');
  }

  /** The agent's undecided approval requests: a hash, request id -> request (JSON). */
  approvalRequests(agentId: string): string {
    return this.#agent(agentId, 'approvals');
  }

  /** Agents of the queue with undecided approval requests: a set (what `troupe approve` lists). */
  get approvalAgents(): string {
    return `${this.prefix}:${this.queue}:approval-agents`;
  }

  /** Present once the agent was cancelled; holds the reason. */
  cancel(agentId: string): string {
    return this.#agent(agentId, 'cancel');
  }

  /** A session's latest turn cancel, `{"turn":n,"reason":"..."}` (see turn-cancel.ts). */
  turnCancel(agentId: string): string {
    return this.#agent(agentId, 'turn-cancel');
  }

  /** The lock key of the job whose run is running the agent now (see agent-state.ts `claimAgent`). */
  runner(agentId: string): string {
    return this.#agent(agentId, 'runner');
  }

  /** Counters of the agent's job: restarts. */
  meta(agentId: string): string {
    return this.#agent(agentId, 'meta');
  }

  /** BullMQ's job hash (job id = agent id, or a batch job's id). */
  job(jobId: string): string {
    return `${this.prefix}:${this.queue}:${jobId}`;
  }

  /**
   * BullMQ's events stream of the queue: every job end with its return value (troupe reads none of
   * it; constants.ts `EVENTS_STREAM_MAX_LENGTH`).
   */
  get events(): string {
    return `${this.prefix}:${this.queue}:events`;
  }

  /**
   * BullMQ's meta hash of the queue: its `opts.maxLenEvents` is the events stream's length, which
   * every BullMQ Queue opened on the queue writes (connection.ts `bullQueueOptions`).
   */
  get queueMeta(): string {
    return `${this.prefix}:${this.queue}:meta`;
  }

  /** BullMQ's lock of an active job: holds the token of the worker that runs it. */
  jobLock(jobId: string): string {
    return `${this.job(jobId)}:lock`;
  }

  /**
   * What became of each agent of a batch job: a hash, agent id -> `h` (handed off to a job of its
   * own) or JSON (src/protocol/redis.ts `BatchJobData`).
   */
  batch(batchId: string): string {
    return `${this.prefix}:${this.queue}:batch:${batchId}`;
  }

  /** Pub/sub channel on which cancels are announced (message: the agent id). */
  get cancelChannel(): string {
    return `${this.prefix}:${this.queue}:cancel`;
  }

  /** Pub/sub channel on which turn cancels are announced (message: the agent id). */
  get turnCancelChannel(): string {
    return `${this.prefix}:${this.queue}:turn-cancel`;
  }

  /** Pub/sub channel on which 429 pauses are announced (shared by every queue, like the limits). */
  get pauseChannel(): string {
    return `${this.prefix}:limit-pauses`;
  }

  /** Counter that numbers worker processes. */
  get workerSequence(): string {
    return `${this.prefix}:${this.queue}:workers`;
  }

  /** Workers seen lately: a sorted set of worker numbers, scored by when (server ms). */
  get workersAlive(): string {
    return `${this.prefix}:${this.queue}:workers:alive`;
  }

  /** Signals from workers to one supervisor: a stream. */
  signals(supervisorId: string): string {
    return `${this.prefix}:${this.queue}:supervisor:${supervisorId}:signals`;
  }

  /** Host-tool calls from workers to one supervisor: a stream. */
  requests(supervisorId: string): string {
    return `${this.prefix}:${this.queue}:supervisor:${supervisorId}:requests`;
  }

  /**
   * That one supervisor is reading its streams: a string its read loop sets every
   * SUPERVISOR_HEARTBEAT_MS, expiring after SUPERVISOR_ALIVE_MS (see supervisorAliveOf).
   */
  supervisorAlive(supervisorId: string): string {
    return supervisorAliveOf(this.requests(supervisorId));
  }

  /**
   * What one supervisor's agents have spent, against its `runLimits`: a hash, `t` tokens and `c`
   * USD, counted by the workers from every receipt (run-budget.ts), and `t:<agentId>`,
   * `c:<agentId>` of each agent not ended yet (what its end tops the count up from).
   */
  runBudget(supervisorId: string): string {
    return `${this.prefix}:${this.queue}:supervisor:${supervisorId}:budget`;
  }

  /** The answer to one host-tool call: a list the caller pops. */
  reply(requestId: string): string {
    return `${this.prefix}:${this.queue}:reply:${requestId}`;
  }

  /** Provider admission keys, shared by every queue on the server. */
  limit(providerKey: string): {
    readonly pause: string;
    readonly slots: string;
    readonly requests: string;
    readonly tokens: string;
  } {
    const base = `${this.prefix}:limit:${providerKey}`;
    return {
      pause: `${base}:pause`,
      slots: `${base}:slots`,
      requests: `${base}:requests`,
      tokens: `${base}:tokens`,
    };
  }
}
