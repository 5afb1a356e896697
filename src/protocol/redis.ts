/**
 * What the redis engine carries through Redis: the agent job's payload, the signals workers send
 * the supervisor that spawned an agent, and host-tool calls. Agent signals are the ones actor hosts
 * send over their events port (./messages.ts `AgentSignal`), plus the scale-out ones.
 */

import type { AgentOutcome } from '../loop/types.ts';
import type {
  ActorSpec,
  AgentSignal,
  HostToolDeclaration,
  OptionalSignal,
  ProviderConfig,
  ProviderLimits,
  ToolModuleRef,
} from './messages.ts';

/** Version of the job payload layout; a worker refuses a job of a version it does not know. */
export const JOB_DATA_VERSION = 2;

/** A supervisor's run budget as a job carries it (`runLimits`, defaults filled; 0 = unlimited). */
export interface RunBudgetLimits {
  readonly maxTotalTokens: number;
  readonly maxCostUsd: number;
}

/**
 * Version of the batch job payload: another number than {@link JOB_DATA_VERSION}'s, so a worker
 * from before batches refuses a batch job saying which version it runs.
 */
export const BATCH_JOB_DATA_VERSION = 3;

/**
 * An agent job's data: everything a worker on any machine needs to run (or resume) the agent.
 * Closures cannot travel, so providers, tool modules and host tools are described, exactly as the
 * thread engine describes them to its hosts. The job's return value is the agent's AgentOutcome.
 */
export interface AgentJobData {
  readonly version: typeof JOB_DATA_VERSION;
  /** Where the worker sends signals and host-tool calls. */
  readonly supervisorId: string;
  readonly agent: Omit<ActorSpec, 'resume'>;
  /** The agent's provider. API keys are best left out: HTTP providers read them from the worker's environment. */
  readonly provider: ProviderConfig;
  /** Admission limits of the provider key (the provider name), shared by every worker. */
  readonly limits: ProviderLimits | undefined;
  /**
   * Imported by the worker: paths must exist on the worker's machine. The same in every job of
   * one `supervisorId` (a worker builds one tool registry per supervisor).
   */
  readonly toolModules: readonly ToolModuleRef[];
  /** Tools that run on the supervisor, called over Redis. The same in every job of one `supervisorId`. */
  readonly hostTools: readonly HostToolDeclaration[];
  /** The supervisor's working directory; a worker uses it when it exists there, else its own. */
  readonly cwd: string;
  /** See DEFAULT_PARK_AFTER_MS. */
  readonly parkAfterMs: number;
  /** Seconds the journal and inbox are kept after the agent ends; undefined = kept. */
  readonly retainSeconds: number | undefined;
  /**
   * The {@link OptionalSignal}s the supervisor had listeners for when it ran the agent: the worker
   * sends only these of them (every other signal always). Absent (a job from a supervisor that
   * predates the field): all of them.
   */
  readonly wantedSignals?: readonly OptionalSignal[];
  /**
   * The supervisor's `runLimits` (0 = unlimited), when it has any: the worker counts every receipt
   * of the agent in the supervisor's budget hash and starts no model request once it is spent.
   * Absent: no run budget (or a supervisor that predates the field).
   */
  readonly runBudget?: RunBudgetLimits;
  /**
   * The batch job that handed the agent off to this job (it parked, its run failed, or its worker
   * had no room): the run's end marks it handed off there too, so a worker that takes the batch
   * over never runs it again even once this job is gone.
   */
  readonly batchId?: string;
  /**
   * The supervisor's X25519 public key (base64 SPKI DER): a worker sends the credentials registered
   * for masking where it runs the agent to the supervisor, sealed with it (the `secrets` signal).
   * Absent (a supervisor that predates the field): none are sent.
   */
  readonly secretsKey?: string;
  /**
   * True: the supervisor beats its heartbeat key (`<prefix>:<queue>:supervisor:<id>:alive`) while
   * it reads its requests, so a host call that finds the key gone, even before and without ever
   * seeing it, fails `supervisor_lost` at once. Absent (a supervisor that predates the field): the
   * key's absence counts only once the worker saw it.
   */
  readonly supervisorBeats?: true;
}

/**
 * A batch job's data: the agents one supervisor ran in one event-loop turn, run by one worker at
 * once under the batch job's lock (one BullMQ job instead of one per agent). The fields every agent
 * of the batch shares are carried once; {@link AgentJobData} of agent `i` is `common` plus
 * `agents[i]` and its provider's entry of `providers`. An agent that parks, or whose run fails, is
 * handed off to a job of its own (job id = agent id). What became of each agent is in the batch's
 * hash (`<prefix>:<queue>:batch:<batch job id>`), one field per agent that ended or left: `h`
 * (handed off to a job of its own, whose return value is then its outcome), or JSON, `{ "outcome":
 * AgentOutcome }` once it ended or `{ "failed": reason }` when its run failed with no retry left.
 */
export interface BatchJobData {
  readonly version: typeof BATCH_JOB_DATA_VERSION;
  /** Always 'batch': a worker of an earlier version refuses the job (it has no `agent`). */
  readonly kind: 'batch';
  readonly common: Omit<AgentJobData, 'version' | 'agent' | 'provider' | 'limits'>;
  /** Provider description and admission limits by provider name, once each. */
  readonly providers: Readonly<
    Record<string, { readonly provider: ProviderConfig; readonly limits: ProviderLimits | undefined }>
  >;
  readonly agents: readonly Omit<ActorSpec, 'resume'>[];
  /** Options of the job an agent is handed off to when its run fails (the supervisor's `restart`). */
  readonly retry: { readonly attempts: number; readonly backoffMs: number };
}

/** An agent's field in its batch's hash once it ended in the batch (JSON); see {@link BatchJobData}. */
export type BatchResult = { readonly outcome: AgentOutcome } | { readonly failed: string };

/**
 * Everything a worker reports about an agent, over a Redis Stream per supervisor. Signals are best
 * effort (trimmed, lost with a dead supervisor): outcomes are read from BullMQ job state.
 */
export type WorkerSignal =
  | AgentSignal
  | {
      readonly type: 'started';
      readonly agentId: string;
      readonly workerId: number;
      /** Continued from its journal (after a park, a restart or a retry). */
      readonly resumed: boolean;
      /** Restart number when the job was taken over after its worker died (0 otherwise). */
      readonly restart: number;
    }
  | { readonly type: 'parked'; readonly agentId: string; readonly workerId: number; readonly index: number }
  | {
      readonly type: 'ended';
      readonly agentId: string;
      /**
       * The outcome, when the agent ended in a batch job (already in the batch's hash, which the
       * supervisor reads when it is absent): saves the supervisor a read per agent.
       */
      readonly outcome?: AgentOutcome;
      /**
       * Why the agent's run failed for good in a batch (no retry left), or why its batch job failed:
       * what the supervisor ends the agent with (`job_failed`) when Redis no longer says (the
       * batch's hash and job expired, or another supervisor removed them). Only sent when the
       * failure is final. Absent from workers of an earlier version: the supervisor reads Redis.
       */
      readonly failure?: SignalFailure;
    }
  | {
      readonly type: 'backoff';
      readonly agentId: string;
      readonly provider: string;
      readonly retryAfterMs: number;
    }
  | {
      /**
       * Credentials registered for masking on the worker (its provider's key, a tool module's
       * `registerSecretValues`), for the supervisor to mask them too in what it writes of agents'
       * results: up to `SECRETS_PER_SIGNAL` values of up to `MAX_FORWARDED_SECRET_CHARS` characters,
       * as a JSON array sealed for the job's `secretsKey` (engines/redis/secret-box.ts), never in
       * clear. Only the values this supervisor's runs registered there, and the worker's own
       * (engines/redis/secret-forwarder.ts). `agentId`: an agent of the supervisor running there.
       */
      readonly type: 'secrets';
      readonly agentId: string;
      readonly sealed: SealedSecrets;
    }
  | {
      readonly type: 'paused';
      readonly agentId: string;
      readonly workerId: number;
      readonly provider: string;
      readonly waitMs: number;
    };

/** The error an `ended` signal carries (see {@link WorkerSignal}): its code, message and fields. */
export interface SignalFailure {
  readonly code: string;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** Values sealed for a supervisor's `secretsKey` (X25519 + HKDF-SHA-256 + AES-256-GCM), base64 fields. */
export interface SealedSecrets {
  /** The sender's ephemeral X25519 public key (SPKI DER). */
  readonly key: string;
  readonly iv: string;
  readonly data: string;
  readonly tag: string;
}

/** One host-tool call as it travels from a worker to the supervisor's request stream. */
export interface HostCall {
  /** Never set: tells a host call from a {@link ToolSpanRequest} on the same stream. */
  readonly type?: undefined;
  readonly requestId: string;
  readonly agentId: string;
  readonly name: string;
  readonly args: Readonly<Record<string, unknown>>;
  /** The model's id of the call (absent from workers of troupe 0.3): run at most once. */
  readonly callId?: string;
  /** Only the outcome of a call cut off by a worker's death is asked for; the tool is not run. */
  readonly resume?: boolean;
}

/**
 * A traced agent's tool call starts on a worker (with an SDK registered there): the supervisor
 * makes the call's `execute_tool` span and answers its `traceparent` on the request's reply list
 * as {@link ToolSpanAnswer}, for the tool to run in that span's context. Travels on the request
 * stream with host calls; a supervisor of an earlier version drops it (it has no `args`), and the
 * worker's wait for the answer is bounded (`TOOL_SPAN_WAIT_MS`).
 */
export interface ToolSpanRequest {
  readonly type: 'tool_span';
  readonly requestId: string;
  readonly agentId: string;
  /** The canonical tool name. */
  readonly name: string;
  readonly callId: string;
  /** When the call started on the worker (epoch ms). */
  readonly at: number;
}

/** The answer to a {@link ToolSpanRequest}: no `traceparent` when the agent is not traced. */
export interface ToolSpanAnswer {
  readonly traceparent?: string;
  /** Vendors' trace state, when the span has one. */
  readonly tracestate?: string;
}

/** What a worker appends to its supervisor's request stream. */
export type SupervisorRequest = HostCall | ToolSpanRequest;

/** Published on the pause channel when a provider key answered 429: every process waits it out. */
export interface PauseAnnouncement {
  readonly providerKey: string;
  /** How long the pause lasts from now, in ms. */
  readonly ms: number;
}

/**
 * The park mark of an agent (`<prefix>:<queue>:agent:<id>:parked`, JSON): its job waits for
 * instruction `index`, or the decision on approval `requestId`, without a worker; whichever worker
 * resumes it reads the mark.
 */
export interface ParkRequest {
  /** The instruction waited for; -1 while the job waits for a decision on `requestId`. */
  readonly index: number;
  /** Set when the job waits for the decision on this approval request. */
  readonly requestId?: string;
  /** Epoch ms at which the wait gives up; null = no limit. */
  readonly deadline: number | null;
}
