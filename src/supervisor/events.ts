/** Typed supervisor events: one stream for every agent, nested ones included. */
import type { EngineEvents } from '../engines/events.ts';
import type { SerializedError } from '../errors.ts';
import type { StartedWarning } from '../journal/events.ts';
import type { AgentOutcome } from '../loop/types.ts';
import type { ApprovalDecision, ApprovalRequest } from '../protocol/approvals.ts';
import type { Usage } from '../providers/types.ts';
import type { ReplayDisposition } from '../replay/types.ts';
import type { RunBudgetSpent } from './run-budget.ts';

export type {
  JobsUnserved,
  ProviderBackoff,
  ProviderPaused,
  ThreadCrashed,
  ThreadEvent,
} from '../engines/events.ts';

/** Who an agent event is about: the members every `agent:*` event starts with. */
export interface AgentRef {
  readonly agentId: string;
  /** The agent that spawned this one, if any. */
  readonly parentId: string | undefined;
  /** Definition name. */
  readonly agent: string;
}

/**
 * `agent:spawned`: a spawn registered the agent; it has not started yet (it waits for a thread or a
 * worker, or fails at once when the supervisor is closed or its run budget is spent).
 */
export interface AgentSpawned extends AgentRef {
  readonly task: string;
  /** The spawn's `metadata`. */
  readonly metadata: Readonly<Record<string, unknown>>;
}
/** `agent:started`: the agent began to run (again, after a restart). */
export interface AgentStarted extends AgentRef {
  /** The thread (threads engine) or worker number (redis engine) it runs on. */
  readonly hostId: number;
  /** It continues from its journal rather than from the start. */
  readonly resumed: boolean;
}
/** `agent:round`: a round starts, with its first model request. */
export interface AgentRound extends AgentRef {
  readonly round: number;
  /** The projection's estimate of the request's input tokens. */
  readonly estimatedTokens: number;
}
/**
 * A tool call: emitted twice per call, when the model makes it (`phase: 'started'`, with its
 * arguments) and when its result is known (`phase: 'completed'`, with ok/error, the start of its
 * output and its duration). Arguments and output are masked as journals are (`redactValue`).
 */
export interface AgentToolCall extends AgentRef {
  readonly round: number;
  /** Canonical tool name. */
  readonly tool: string;
  readonly callId: string;
  readonly phase: 'started' | 'completed';
  /** undefined when the call starts, true/false when its result is known. */
  readonly ok: boolean | undefined;
  /** started: the arguments as the model gave them. */
  readonly args?: unknown;
  /** completed: the start of the result text (at most TOOL_OUTPUT_PREVIEW_CHARS, 400). */
  readonly output?: string;
  /** completed: milliseconds from the call to its result (measured where the agent runs). */
  readonly durationMs?: number;
  /** completed: the loop refused the call (it never ran). */
  readonly refused?: boolean;
  /** completed, in a replay: answered from the recording, run live, or refused. */
  readonly replay?: ReplayDisposition;
}
/** One model request's usage: emitted per request (step), as it happens. */
export interface AgentUsage extends AgentRef {
  readonly round: number;
  /** The step (model request) this usage belongs to. */
  readonly step: number | undefined;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /**
   * Some counts were estimated by troupe: both when the server reported no usage, one side when it
   * reported only the other readably (`usage.estimatedSide` says which).
   */
  readonly estimated: boolean;
  /** USD; null when the model's price is unknown. */
  readonly costUsd: number | null;
  readonly latencyMs: number;
  /** Every count of the request, cached and reasoning tokens included. */
  readonly usage: Usage;
  /** Epoch ms when the request ended. */
  readonly endedAt: number;
  /** Set when the request failed. */
  readonly errorCode?: string;
  /**
   * Not one request: at the agent's end, what its outcome (built from its journal) holds beyond the
   * `agent:usage` events emitted for it, as the usage sink's `unreported` record. Its thread (or
   * redis worker) died between journalling requests' receipts and sending them; for a listener
   * added while the agent ran, the requests before it listened are in it too. `step` is
   * undefined, `round` the agent's last, `latencyMs` 0 and `endedAt` its end. So an agent's
   * events add up to its outcome (less `inherited`). Absent on the events of requests.
   */
  readonly unreported?: true;
}
/**
 * `agent:text`: the text of one model answer, whole (not streamed), as it went into the agent's
 * history, with secrets masked as its journal masks them (a model repeats keys it read). The
 * outcome's `answer` and `result` are not masked (see `AgentHandle.result`).
 */
export interface AgentText extends AgentRef {
  readonly text: string;
}
/** `agent:waiting`: the agent called `wait_for_instruction` and waits for `handle.send()`. */
export interface AgentWaiting extends AgentRef {}
/** Problems with an agent's tools when it started: unknown tool names, unreachable MCP servers. */
export interface AgentWarnings extends AgentRef {
  readonly warnings: readonly StartedWarning[];
}
/** `agent:instructed`: the agent received an instruction it waited for. */
export interface AgentInstructed extends AgentRef {
  readonly text: string;
}
/**
 * A session (`Supervisor.session`) answered user message `turn` (0-based). After a thread restart
 * the last answer may be reported again, with the same `turn`.
 */
export interface AgentTurn extends AgentRef {
  readonly turn: number;
  /** The answer text (the JSON of the result when the turn ended with complete_task); '' when cancelled. */
  readonly answer: string;
  /** The `complete_task` result, when the turn ended with one. */
  readonly result?: unknown;
  /** Set when the turn was cancelled ({@link AgentSession.cancelTurn}) instead of answered: why. */
  readonly cancelled?: string;
}
/** `handle.send()` could not deliver an instruction (`instruction_queue_full`); `instruct()` rejects instead. */
export interface AgentDropped extends AgentRef {
  readonly text: string;
  readonly error: SerializedError;
}
/** `agent:completed` and `agent:failed`: the agent ended (or failed before it started), with its outcome. */
export interface AgentEnded extends AgentRef {
  readonly outcome: AgentOutcome;
}
/**
 * `agent:restarted`: the agent's thread died (threads engine) or its worker lost the job (redis
 * engine), and it runs again from its journal.
 */
export interface AgentRestarted extends AgentRef {
  /** How many times it has restarted, this one included. */
  readonly restart: number;
  readonly cause: SerializedError;
  /**
   * The death counts against its restart cap: threads engine, it was running a tool in the thread
   * when the thread died (or was alone on it); a bystander restarts without using its cap. Redis
   * engine: every takeover counts against the worker's `maxStalledCount`.
   */
  readonly charged: boolean;
}
/** An agent's job was parked: it waits for instruction `index` without holding a worker slot (redis). */
export interface AgentParked extends AgentWaiting {
  readonly hostId: number;
  readonly index: number;
}
/**
 * No `providers` were given and the environment names no API key, so the simulated model answers
 * (emitted once per supervisor, at its first spawn).
 */
export interface ProviderSimulated {
  readonly provider: 'simulated';
  /** What the warning says: why, and how to get a real model. */
  readonly message: string;
}

/** `agent:approval`: a tool call of the agent waits for a decision. */
export interface AgentApproval extends AgentRef {
  readonly request: ApprovalRequest;
}

/** `agent:decision`: a decision on one of the agent's calls was journalled, whoever made it. */
export interface AgentDecision extends AgentRef {
  /** Absent for a call denied without asking (a `deny` rule, `dontAsk`). */
  readonly requestId: string | undefined;
  readonly callId: string;
  readonly tool: string;
  /** The rule that asked, or that denied. */
  readonly rule: string;
  readonly decision: ApprovalDecision;
  /**
   * The request decided, when this Supervisor saw it asked (absent for a call denied without
   * asking, and for a request asked before a restart of the supervisor).
   */
  readonly request?: ApprovalRequest;
}

/**
 * Event names and payloads of {@link Supervisor}. `thread:*` come from the threads engine only;
 * `agent:parked`, `provider:paused` and `jobs:unserved` from the redis engine only.
 */
export interface SupervisorEvents extends EngineEvents {
  'agent:spawned': [event: AgentSpawned];
  'agent:started': [event: AgentStarted];
  'agent:round': [event: AgentRound];
  'agent:tool': [event: AgentToolCall];
  'agent:usage': [event: AgentUsage];
  'agent:text': [event: AgentText];
  'agent:waiting': [event: AgentWaiting];
  'agent:warnings': [event: AgentWarnings];
  'agent:instructed': [event: AgentInstructed];
  'agent:turn': [event: AgentTurn];
  'agent:dropped': [event: AgentDropped];
  'agent:completed': [event: AgentEnded];
  'agent:failed': [event: AgentEnded];
  'agent:restarted': [event: AgentRestarted];
  'agent:parked': [event: AgentParked];
  'agent:approval': [event: AgentApproval];
  'agent:decision': [event: AgentDecision];
  'provider:simulated': [event: ProviderSimulated];
  /** The `runLimits` are spent: every agent is being cancelled, and later spawns fail. */
  'supervisor:budget': [event: RunBudgetSpent];
}
