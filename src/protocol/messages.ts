/**
 * Every message that crosses between the supervisor (main thread) and an actor host (worker thread),
 * and what both engines carry to an agent wherever it runs (ActorSpec, AgentMessage, AgentSignal).
 * The redis engine's own wire types are in ./redis.ts.
 *
 * Five channels per host, each a dedicated MessagePort transferred with the piscina task:
 * - control (main -> host): request/response calls, wrapped with comlink ({@link HostControlApi});
 *   spawns go as one `spawnMany` call per host and scheduling pass (a pass every 128 agents queued);
 * - callback (both ways, raw): the host's calls to the supervisor ({@link SupervisorCallbackApi}:
 *   `complete_task`, host tools, rate-limit reports), {@link HostCallMessage} up and
 *   {@link HostCallReplyMessage} down, each batched per event-loop turn. Every agent calls
 *   `complete_task` once, so comlink's per-call cost here was paid thousands of times per fan-out
 *   (profiled: its `postMessage` alone was ~6 % of a host's time at 1,000 agents x 8 rounds);
 * - events (host -> main): fire-and-forget {@link HostEventMessage} posts; signals and agent ends
 *   go as one batch per event-loop turn, so the high-volume event stream costs one message per
 *   turn and no response message;
 * - admission (both ways, raw): provider slots, {@link AdmissionRequestMessage} up and
 *   {@link AdmissionGrantMessage} down, each batched per event-loop turn. Every provider request
 *   on a limited key crosses it twice, so it avoids comlink's per-call cost (an id, a listener and
 *   a response message per call).
 * - inbox (both ways, raw): instruction waits, {@link InboxRequestMessage} up (batched per turn;
 *   an actor host sends it inside its events `batch` instead, see {@link HostEventMessage})
 *   and {@link InstructionDeliveryMessage} down, one per delivery, posted the moment `send()` wakes
 *   a parked wait; approval waits likewise ({@link ApprovalWaitMessage} up, one per request, and
 *   {@link DecisionDeliveryMessage} down). Comlink puts one 'message' listener on its port per pending call, so with
 *   hundreds of parked agents every reply was dispatched to hundreds of listeners.
 * Comlink needs one port per direction: a port that both exposes and wraps would hand responses to
 * its own expose handler.
 */
import type { ResolvedBlocks } from '../blocks/types.ts';
import type { AgentDefinition } from '../definition/types.ts';
import type { SerializedError } from '../errors.ts';
import type { InstructionIndex, StartedWarning } from '../journal/events.ts';
import type { AgentLimits, AgentOutcome } from '../loop/types.ts';
import type { McpServers } from '../mcp/config.ts';
import type { ModelSettings } from '../providers/model-settings.ts';
import type { Receipt, StopReason, ToolChoice, Usage } from '../providers/types.ts';
import type { ReplayDisposition, ReplayRecording } from '../replay/types.ts';
import type { AgentPermissions } from '../tools/permissions.ts';
import type { ToolOutcome, ToolTraceContext } from '../tools/types.ts';
import type { ApprovalDecision, ApprovalRequest } from './approvals.ts';

/** How a host builds a provider. Closures cannot cross threads, so providers are described. */
export type ProviderConfig =
  | {
      readonly kind: 'simulated' | 'openai' | 'anthropic';
      readonly options?: Readonly<Record<string, unknown>>;
    }
  | {
      readonly kind: 'module';
      /** Absolute path or file URL of a module the host imports. */
      readonly module: string;
      /** Export that is a `(options) => Provider` factory. @default 'default' */
      readonly export?: string;
      readonly options?: Readonly<Record<string, unknown>>;
    };

/** A user tool module: imported inside each thread, `export` must be a Tool or an array of Tools. */
export interface ToolModuleRef {
  readonly module: string;
  readonly export?: string;
}

/** Limits for one provider key, shared by every agent of a supervisor. Omitted fields are unlimited. */
export interface ProviderLimits {
  /** Requests in flight at once. */
  readonly concurrency?: number;
  /** At most `count` requests start in any rolling `intervalMs` window. */
  readonly requestsPerInterval?: { readonly count: number; readonly intervalMs: number };
  /** Estimated input tokens admitted per rolling minute. */
  readonly tokensPerMinute?: number;
}

/**
 * The orchestration host tools (spawn a subagent, instruct it, await it). Every supervisor offers
 * them; an agent gets them only when its definition's `tools` names them.
 */
export {
  AWAIT_AGENTS,
  ORCHESTRATION_TOOL_NAMES,
  SEND_INSTRUCTION,
  SPAWN_AGENT,
} from '../tools/builtin/orchestration.ts';

/** A tool that runs on the supervisor; the host sees only its declaration. */
export interface HostToolDeclaration {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly readOnly: boolean;
  /** Every call waits for a person's approval (functions cannot cross threads). @default false */
  readonly needsApproval?: boolean;
}

/**
 * The signals an agent's runner sends only while the supervisor has a listener for them (the
 * high-volume ones: one or more per model request). The others (waiting, instructed, warnings)
 * always go.
 */
export type OptionalSignal = 'round' | 'tool_call' | 'receipt' | 'text';

/** Sent once with the piscina task that starts a host. */
export interface HostConfig {
  readonly hostId: number;
  readonly providers: Readonly<Record<string, ProviderConfig>>;
  /** Provider keys that have admission limits: hosts ask for a slot before each request. */
  readonly admissionKeys: readonly string[];
  readonly toolModules: readonly ToolModuleRef[];
  readonly hostTools: readonly HostToolDeclaration[];
  readonly journalDir: string;
  readonly fsync: 'always' | 'interval' | 'never';
  readonly cwd: string;
  /** The {@link OptionalSignal}s the supervisor has listeners for when the host starts. */
  readonly wantedSignals: readonly OptionalSignal[];
  /**
   * The values registered for masking in the supervisor's thread when the host starts (the
   * program's `registerSecretValues`, configured credentials, values other hosts forwarded): the
   * host's journals and reports mask them too. Later ones come as {@link HostControlApi.learnSecrets}.
   */
  readonly secretValues: readonly string[];
}

/** A worker_threads MessagePort (named through the global so only engines/ and workers/ import worker_threads). */
export type Port = InstanceType<typeof MessagePort>;

/** The piscina task payload that turns a worker into a long-lived actor host. */
export interface HostTask {
  readonly config: HostConfig;
  readonly control: Port;
  readonly callback: Port;
  readonly events: Port;
  readonly admission: Port;
  readonly inbox: Port;
}

/**
 * Everything an engine needs to run (or resume) one agent, wherever it runs. Both engines carry it
 * whole (structured clone to a thread, JSON in a job) to the one function that starts the loop
 * (src/engines/actor/run-actor.ts), so a field added here reaches the agent on either engine.
 */
export interface ActorSpec {
  readonly agentId: string;
  readonly parentId: string | undefined;
  /** The parent's `spawn_agent` call that spawned it (journalled in Started as `spawnCallId`). */
  readonly spawnCallId?: string;
  /**
   * A child resumed by its parent's adoption: the parent's instructions delivered to it again at
   * new indices (journalled in its Resumed event as `instructionIndices`).
   */
  readonly instructionIndices?: readonly InstructionIndex[];
  /** Nesting depth: 0 for agents spawned by the program. */
  readonly depth: number;
  readonly definition: AgentDefinition;
  readonly task: string;
  readonly context: readonly string[];
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly provider: string;
  readonly model: string;
  readonly limits: AgentLimits;
  /** Continue from the journal instead of starting afresh. */
  readonly resume: boolean;
  /** MCP servers the agent may use (settings, not connections: the runner connects). */
  readonly mcpServers: McpServers;
  /** Set for a replayed agent: the recording its tool calls are answered from (src/replay/). */
  readonly replay?: ReplayRecording;
  /**
   * Run as a session (src/loop/session.ts): each instruction is a user message answered by one
   * turn, reported as a `turn` signal. @default false
   */
  readonly session?: boolean;
  /** Model settings of the spawn (the plan's under it): over the definition's, key by key. */
  readonly modelSettings: ModelSettings;
  /** The supervisor's model settings: under the definition's. */
  readonly defaultModelSettings: ModelSettings;
  /**
   * The definition's blocks, resolved by the supervisor when the agent was spawned (absent when
   * it refers to none, or a resumed agent's could not be resolved: it runs its journal's).
   */
  readonly blocks?: ResolvedBlocks;
  /** Permissions besides the definition's (rules, mode, bypass consent, approval timeout). */
  readonly permissions: AgentPermissions;
  /**
   * Set when the supervisor traces the agent: the runner forwards {@link TraceEvent}s and runs the
   * agent inside this context, so spans its tools make join the agent's trace.
   */
  readonly trace?: ActorTraceContext;
}

/**
 * The trace context of an agent's `invoke_agent` span, carried in its spec to the thread or (in
 * the job data) to the redis worker that runs it.
 */
export interface ActorTraceContext {
  /** W3C `traceparent` of the agent's span: `00-<trace id>-<span id>-<flags>`. */
  readonly traceparent: string;
  /**
   * Forward content with the trace events (the task, system prompt, tool arguments and results,
   * the model's text, instructions), masked with `redactValue`. Off unless asked for.
   */
  readonly captureContent: boolean;
}

/**
 * What the supervisor's tracing learns of one audit event: its timing and figures, and content
 * only when the agent's {@link ActorTraceContext.captureContent} is set. Built where the agent runs
 * (src/telemetry/trace-events.ts); spans are made from them on the supervisor.
 */
export type TraceEvent =
  | {
      readonly type: 'Started';
      readonly provider: string;
      readonly model: string;
      readonly definition: string;
      readonly content?: {
        readonly task: string;
        readonly systemPrompt: string;
        readonly context: readonly string[];
      };
    }
  | {
      readonly type: 'InferenceSubmitted';
      readonly round: number;
      readonly step: number | undefined;
      readonly request: number;
      readonly estimatedTokens: number;
      /** Tools offered. */
      readonly tools: number;
      readonly toolChoice?: ToolChoice;
      readonly captureFor?: string;
      readonly modelSettings?: ModelSettings;
    }
  | {
      readonly type: 'ProviderReceipt';
      readonly round: number;
      readonly step: number | undefined;
      readonly receipt: Receipt;
      readonly stopReason?: StopReason;
      readonly errorCode?: string;
    }
  /** The model's own text (content only). */
  | { readonly type: 'Text'; readonly round: number; readonly text: string }
  | {
      readonly type: 'ToolCall';
      readonly round: number;
      readonly callId: string;
      readonly name: string;
      readonly modelName: string;
      /** Arguments (content only). */
      readonly args?: unknown;
    }
  | {
      readonly type: 'ToolResult';
      readonly callId: string;
      readonly name: string;
      readonly ok: boolean;
      readonly refused: boolean;
      readonly projectionAccepted: boolean;
      /** The agent a `spawn_agent` call started. */
      readonly child?: string;
      /** The result text (content only). */
      readonly text?: string;
    }
  | { readonly type: 'Waiting'; readonly callId: string; readonly index: number }
  | {
      readonly type: 'Instructed';
      readonly callId: string | undefined;
      readonly index: number;
      /** The instruction (content only). */
      readonly text?: string;
    }
  | { readonly type: 'Resumed'; readonly nextRound: number; readonly pendingCallIds: readonly string[] };

/** Host memory and load, answered to every heartbeat. */
export interface HostStats {
  readonly hostId: number;
  readonly agents: number;
  readonly heapUsed: number;
  readonly external: number;
}

/**
 * main -> host calls (comlink over the control port). Instructions are not pushed unasked: a
 * waiting agent asks for instruction number n from its supervisor mailbox over the inbox port,
 * which keeps delivery idempotent across restarts.
 */
export interface HostControlApi {
  /** Starts agents, in order: every agent one scheduling pass placed on this host. */
  spawnMany(specs: readonly ActorSpec[]): void;
  cancel(agentId: string, reason: string): void;
  /** Cancels session `agentId`'s turn `turn` alone (see {@link AgentMessage} `cancel_turn`). */
  cancelTurn(agentId: string, turn: number, reason: string): void;
  /** A provider key answered 429 somewhere: no request on it may start before `untilEpochMs`. */
  pauseProvider(providerKey: string, untilEpochMs: number): void;
  heartbeat(): HostStats;
  /** Runs a full GC when the thread was started with --expose-gc (benchmarks) and reports stats. */
  measure(): HostStats;
  /** Cancels every agent and lets the host task return. */
  shutdown(reason: string): void;
  /** The supervisor now has listeners for these {@link OptionalSignal}s (the set only grows). */
  wantSignals(kinds: readonly OptionalSignal[]): void;
  /** Values registered for masking in the supervisor's thread since the host started: mask them here too. */
  learnSecrets(values: readonly string[]): void;
}

/** host -> main calls, answered by the supervisor ({@link HostCallMessage} over the callback port). */
export interface SupervisorCallbackApi {
  /** A provider answered 429: pause that key for every agent. */
  reportRateLimit(providerKey: string, retryAfterMs: number): void;
  completeTask(agentId: string, result: unknown): Promise<{ accepted: boolean; message?: string }>;
  /**
   * `callId`: the model's id of the call; the supervisor runs each at most once. `resume`: a
   * restarted agent asks for the outcome of a call its thread's death cut off, never running it.
   */
  callHostTool(
    agentId: string,
    name: string,
    args: Readonly<Record<string, unknown>>,
    callId?: string,
    resume?: boolean,
  ): Promise<ToolOutcome>;
  /**
   * Tool call `callId` (tool `name`) of a traced agent starts at `at` (epoch ms): the W3C trace
   * context of its `execute_tool` span, to run the tool in (undefined when not traced).
   */
  toolSpan(agentId: string, name: string, callId: string, at: number): Promise<ToolTraceContext | undefined>;
}

/** One call of {@link SupervisorCallbackApi}, numbered by the host that makes it. */
export type HostCall =
  | {
      readonly id: number;
      readonly method: 'completeTask';
      readonly agentId: string;
      readonly result: unknown;
    }
  | {
      readonly id: number;
      readonly method: 'callHostTool';
      readonly agentId: string;
      readonly name: string;
      readonly args: Readonly<Record<string, unknown>>;
      /** The model's id of the call: the supervisor runs each at most once. */
      readonly callId: string | undefined;
      /** Only the outcome of a call cut off by a thread's death is asked for. */
      readonly resume?: true;
    }
  | {
      readonly id: number;
      readonly method: 'reportRateLimit';
      readonly providerKey: string;
      readonly retryAfterMs: number;
    }
  | {
      readonly id: number;
      readonly method: 'toolSpan';
      readonly agentId: string;
      readonly name: string;
      readonly callId: string;
      readonly at: number;
    };

/** host -> main on the callback port: the calls a host made in one event-loop turn, in order. */
export type HostCallMessage = { readonly type: 'calls'; readonly calls: readonly HostCall[] };

/** The answer to one {@link HostCall}: its value, or the error it threw. */
export type HostCallReply =
  | { readonly id: number; readonly value: unknown }
  | { readonly id: number; readonly error: SerializedError };

/** main -> host on the callback port: the answers ready in one event-loop turn. */
export type HostCallReplyMessage = { readonly type: 'replies'; readonly replies: readonly HostCallReply[] };

/**
 * A message to a running agent, delivered by its engine: an instruction (answered to the agent's
 * `wait_for_instruction`, queued until then) or a cancel (aborts its provider request and tool).
 */
export type AgentMessage =
  | {
      readonly type: 'instruction';
      readonly text: string;
      /**
       * Deliver it as instruction number `index`: nothing is added when the inbox already holds
       * that many (re-delivering what an agent received before a restart, or a recording's
       * instructions to a resumed replay, is idempotent). @default the next index
       */
      readonly index?: number;
    }
  | { readonly type: 'cancel'; readonly reason: string }
  /**
   * Cancels a session's turn for user message `turn` alone (TurnCancelled); the session then
   * waits for the next message. Ignored once that turn has ended.
   */
  | { readonly type: 'cancel_turn'; readonly turn: number; readonly reason: string }
  /** The decision on the agent's approval request `requestId`; the first one delivered wins. */
  | { readonly type: 'approval'; readonly requestId: string; readonly decision: ApprovalDecision };

/** What the supervisor learns about an agent as it runs (a subset of its audit events). */
export type AgentSignal =
  | {
      readonly type: 'round';
      readonly agentId: string;
      readonly round: number;
      readonly estimatedTokens: number;
    }
  | {
      readonly type: 'tool_call';
      readonly agentId: string;
      readonly round: number;
      /** Canonical tool name. */
      readonly name: string;
      readonly callId: string;
      /** `started` when the model made the call; `completed` when its result is known. */
      readonly phase: 'started' | 'completed';
      /** undefined when the call starts. */
      readonly ok: boolean | undefined;
      /** started: the arguments as the model gave them, secret-looking values masked. */
      readonly args?: unknown;
      /** completed: the start of the result text, masked (at most TOOL_OUTPUT_PREVIEW_CHARS). */
      readonly output?: string;
      /** completed: milliseconds from the call to its result. */
      readonly durationMs?: number;
      /** completed: the call was refused by the loop and never ran. */
      readonly refused?: boolean;
      /** completed, in a replay: how the call was answered. */
      readonly replay?: ReplayDisposition;
    }
  | {
      /** One model request's usage (one per step). */
      readonly type: 'receipt';
      readonly agentId: string;
      readonly round: number;
      /** The step; absent for journals of troupe 0.2 (one receipt per round). */
      readonly step: number | undefined;
      readonly inputTokens: number;
      readonly outputTokens: number;
      /** Some counts were estimated by troupe: both sides, or the one `usage.estimatedSide` names. */
      readonly estimated: boolean;
      /** USD; null when the model's price is unknown. */
      readonly costUsd: number | null;
      readonly latencyMs: number;
      /** Every count of the request (cached and reasoning tokens included). */
      readonly usage: Usage;
      /** Epoch ms when the request ended. */
      readonly endedAt: number;
      /** Set when the request failed. */
      readonly errorCode?: string;
    }
  | { readonly type: 'waiting'; readonly agentId: string }
  | {
      readonly type: 'warnings';
      readonly agentId: string;
      /** What the Started event recorded: unknown tool names (with file:line:column), unreachable MCP servers. */
      readonly warnings: readonly StartedWarning[];
    }
  | { readonly type: 'instructed'; readonly agentId: string; readonly text: string }
  | {
      /** A session answered user message `turn` (TurnAnswered), or its turn was cancelled (TurnCancelled). */
      readonly type: 'turn';
      readonly agentId: string;
      readonly turn: number;
      /** The answer ('' for a cancelled turn). */
      readonly answer: string;
      /** The `complete_task` result, when the turn ended with one. */
      readonly result?: unknown;
      /** Set when the turn was cancelled instead of answered: why. */
      readonly cancelled?: string;
    }
  | { readonly type: 'text'; readonly agentId: string; readonly text: string }
  /** A tool call waits for a decision (sent by the runner each time the agent waits on it: dedupe by id). */
  | { readonly type: 'approval'; readonly agentId: string; readonly request: ApprovalRequest }
  /** A decision was journalled (ApprovalDecided), whoever made it. */
  | {
      readonly type: 'decided';
      readonly agentId: string;
      /** Absent for a call denied without asking (a `deny` rule, `dontAsk`). */
      readonly requestId: string | undefined;
      readonly callId: string;
      readonly tool: string;
      readonly rule: string;
      readonly decision: ApprovalDecision;
    }
  /** Only for agents whose spec has `trace`: one per audit event the tracing uses. */
  | { readonly type: 'trace'; readonly agentId: string; readonly at: number; readonly event: TraceEvent };

/** An agent's run on a host ended: its outcome. */
export interface AgentEnded {
  readonly agentId: string;
  readonly outcome: AgentOutcome;
}

/** host -> main posts on the events port. */
export type HostEventMessage =
  | { readonly type: 'ready'; readonly hostId: number; readonly threadId: number }
  /**
   * What a host's agents did in one event-loop turn: their signals, then the agents that ended
   * (an agent's last signals always come before its end). One message per turn, not one per
   * signal and one per end. `inbox` carries the instruction waits asked and abandoned in the same
   * turn (the supervisor parks them before it reads the signals): a parked agent's `waiting`
   * signal and its wait cost the host one post and the main thread one wake-up, not two.
   */
  | {
      readonly type: 'batch';
      readonly signals: readonly AgentSignal[];
      readonly ended: readonly AgentEnded[];
      readonly inbox?: InboxRequestMessage;
    }
  | { readonly type: 'host_error'; readonly error: SerializedError }
  /**
   * Credentials registered for masking in this host's thread (a module provider's key, a tool
   * module's `registerSecretValues`), for the supervisor's thread to mask them too in what it
   * writes of agents' results. Posted as they are registered, so before any later outcome.
   */
  | { readonly type: 'secrets'; readonly values: readonly string[] }
  /**
   * A stdio MCP server this host started or saw end. A terminated thread cannot stop its child
   * processes, so the thread engine kills the ones a dead host leaves behind: on POSIX the whole
   * process group the server leads (`pid` is its id too), with what the server started.
   */
  | { readonly type: 'mcp_process'; readonly pid: number; readonly state: 'started' | 'exited' }
  /**
   * The process group of a `run_terminal_cmd` command this host started, or killed once the
   * command ended. The thread engine kills the groups a dead host leaves behind, as it does its
   * MCP servers.
   */
  | { readonly type: 'command_process'; readonly pgid: number; readonly state: 'started' | 'exited' };

/**
 * Numbers per acquire in {@link AdmissionRequestMessage.acquires}: ticket, key index, priority,
 * estimated tokens.
 */
export const ADMISSION_ACQUIRE_STRIDE = 4;

/**
 * host -> main on the admission port: everything a host asked in one event-loop turn.
 *
 * Batches are flat number arrays rather than arrays of objects: cloning an object costs about ten
 * times as much as cloning its numbers (measured: 0.5 µs against 0.05 µs per acquire, each way),
 * and a busy host sends hundreds per message.
 */
export type AdmissionRequestMessage = {
  readonly type: 'admission';
  /**
   * Requests waiting for a slot, {@link ADMISSION_ACQUIRE_STRIDE} numbers each: a ticket (unique
   * within the host), the provider key's index in {@link HostConfig.admissionKeys}, the priority
   * (higher goes first) and the estimated input tokens (for a token-per-minute budget).
   */
  readonly acquires: readonly number[];
  /** Grant ids of finished requests. */
  readonly releases: readonly number[];
  /** Tickets whose request was aborted after it was sent; one already granted is released. */
  readonly cancels: readonly number[];
};

/** main -> host on the admission port: the slots granted in one event-loop turn. */
export type AdmissionGrantMessage = {
  readonly type: 'grants';
  /** Pairs: ticket, grant id (the host releases the slot by grant id). */
  readonly grants: readonly number[];
};

/**
 * Longest a host holds a released slot before it sends the release, in ms. Releases and acquires go
 * up once per event-loop turn, but a turn in which hundreds of timers expire (a wave of simulated
 * or rate-paced requests ending together) runs every agent's next step before it ends: without a
 * bound, the first slot freed in it waited for the whole wave's work, idle.
 */
export const ADMISSION_RELEASE_HOLD_MS = 1;

/** Numbers per wait in {@link InboxRequestMessage.waits}: ticket, instruction index, timeout. */
export const INBOX_WAIT_STRIDE = 3;

/** {@link InboxRequestMessage.waits} timeout meaning "no limit". */
export const INBOX_NO_TIMEOUT = -1;

/**
 * host -> main: the instruction waits asked and abandoned in one event-loop turn, inside the
 * host's events `batch` (the inbox port's server takes it too, as it comes).
 * Flat arrays, as admission's, because cloning numbers and strings costs a fraction of objects.
 */
export type InboxRequestMessage = {
  readonly type: 'inbox';
  /**
   * {@link INBOX_WAIT_STRIDE} numbers per wait: a ticket (unique within the host), the instruction
   * index asked for (how many the agent has journaled), and the timeout in ms
   * ({@link INBOX_NO_TIMEOUT} for none).
   */
  readonly waits: readonly number[];
  /** The agent of each wait, in the order of `waits`. */
  readonly agents: readonly string[];
  /** Tickets of waits the host gave up (the agent was cancelled while parked). */
  readonly abandons: readonly number[];
};

/**
 * main -> host on the inbox port: the answer to one wait, posted alone and at once (it is the
 * latency path from `send()` to the agent). `text` is null after the wait's timeout, and when the
 * supervisor ends the wait (cancel, the agent is not running).
 */
export type InstructionDeliveryMessage = {
  readonly type: 'instruction';
  readonly ticket: number;
  readonly text: string | null;
};

/** host -> main on the inbox port: a wait for the decision on one approval request, or its end. */
export type ApprovalWaitMessage =
  | { readonly type: 'approval'; readonly ticket: number; readonly request: ApprovalRequest }
  /** The agent gave the wait up (cancelled, timed out). */
  | { readonly type: 'approval_abandon'; readonly ticket: number };

/**
 * main -> host on the inbox port: the decision for one approval wait; null when the supervisor
 * ends the wait (the agent is not running, or waits on another request).
 */
export type DecisionDeliveryMessage = {
  readonly type: 'decision';
  readonly ticket: number;
  readonly decision: ApprovalDecision | null;
};

/** Everything a host posts on its inbox port. */
export type InboxUpMessage = InboxRequestMessage | ApprovalWaitMessage;

/** Everything the supervisor posts on a host's inbox port. */
export type InboxDownMessage = InstructionDeliveryMessage | DecisionDeliveryMessage;

/**
 * The part of a MessagePort that the admission and inbox clients and servers use, so tests can connect them
 * with a fake pair.
 */
export interface AdmissionEndpoint<Incoming, Outgoing> {
  postMessage(message: Outgoing): void;
  on(event: 'message', listener: (message: Incoming) => void): unknown;
}
