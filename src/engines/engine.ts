/**
 * The engine interface: what differs between running agents in this process's worker threads
 * (src/engines/threads/) and running them as BullMQ jobs on `troupe worker` processes
 * (src/engines/redis/). An engine places and starts actors, delivers messages to them, reports
 * what they do, detects a lost one and restarts it from its journal, shares provider admission,
 * measures and closes.
 *
 * Everything that is the same whatever runs the agents (records, handles, events, fan-out,
 * orchestration, result validation, usage roll-up, cancellation semantics) is the Supervisor's
 * (src/supervisor/), which talks to an engine only through this file. Imports go one way: the
 * supervisor imports engines, an engine never imports the supervisor; what an engine needs of it
 * is {@link EngineHost}.
 */
import type { RetryPolicy } from '../definition/types.ts';
import type { SerializedError } from '../errors.ts';
import type { AuditEvent } from '../journal/events.ts';
import type { UsageTotals } from '../journal/usage.ts';
import type { AgentOutcome, InheritedSpend } from '../loop/types.ts';
import type {
  ActorSpec,
  AgentMessage,
  AgentSignal,
  HostStats,
  HostToolDeclaration,
  OptionalSignal,
  ProviderConfig,
  ProviderLimits,
  ToolModuleRef,
} from '../protocol/messages.ts';
import type { ToolOutcome, ToolTraceContext } from '../tools/types.ts';
import type { EngineEvents } from './events.ts';

/** How far {@link Engine.childStarts} reads. */
export interface JournalScanBounds {
  /**
   * Journals examined at most, of those naming the parent (every journal's ids are read once per
   * engine, by the first search that finds it; on redis, from each stream's first entry).
   */
  readonly maxJournals: number;
  /** Bytes of each journal's first line parsed whole at most (to learn a child's agent and task). */
  readonly maxBytes: number;
  /**
   * Bytes of a longer first line read at most, in constant memory, for its ids only
   * (src/journal/started-head.ts).
   */
  readonly maxHeadBytes: number;
  /**
   * Shared by the searches of one resume (any object, compared by identity): the redis engine lists
   * its queue's journal streams once per `search`, by the first search given it, so a resume
   * searching under each finished descendant lists them once, not once per descendant; searches of
   * different resumes made while a listing runs share the next one. A listing reads the queue's
   * registry of journal streams for those created since the last (the engine's first also SCANs
   * the keyspace, for streams of earlier versions; src/engines/redis/child-index.ts).
   * Absent: listed again. The thread engine ignores it (it reads its directory's listing on each
   * search, locally).
   */
  readonly search?: object;
}

/** A journal that names the parent {@link Engine.childStarts} looked for. */
export interface ChildStart {
  readonly agentId: string;
  /** The parent's `spawn_agent` call that started it (absent in older journals). */
  readonly spawnCallId?: string;
  /** Its definition's name and its task: absent when its first line was too long to parse whole. */
  readonly agent?: string;
  readonly task?: string;
}

/** A {@link ChildStart} without its absent members. */
export function childStartOf(
  agentId: string,
  spawnCallId: string | undefined,
  agent?: string,
  task?: string,
): ChildStart {
  return {
    agentId,
    ...(spawnCallId === undefined ? {} : { spawnCallId }),
    ...(agent === undefined ? {} : { agent }),
    ...(task === undefined ? {} : { task }),
  };
}

/** What {@link Engine.childStarts} found, and what its bounds kept it from reading. */
export interface ChildStarts {
  readonly starts: ChildStart[];
  /**
   * Journals not examined (past `maxJournals`, or whose ids lie past `maxHeadBytes`): a child among
   * them is not found. Named (a file, a stream key) so that a warning can say which.
   */
  readonly notExamined: string[];
}

/** Which engine runs the agents. */
export type Backend = 'threads' | 'redis';

/** What an engine reports about one agent while it runs (its end goes to {@link EngineHost.ended}). */
export type AgentReport =
  | AgentSignal
  | {
      readonly type: 'started';
      readonly agentId: string;
      /** The thread (threads) or worker number (redis) it runs on. */
      readonly hostId: number;
      /** Continued from its journal. */
      readonly resumed: boolean;
    }
  | {
      /** Its runner was lost (thread or worker died); it continues from its journal. */
      readonly type: 'restarted';
      readonly agentId: string;
      readonly restart: number;
      readonly cause: SerializedError;
      /** The death counts against its restart cap (it was blamed for it). */
      readonly charged: boolean;
    }
  | {
      /** Its job was parked waiting for instruction `index`, holding no worker slot (redis). */
      readonly type: 'parked';
      readonly agentId: string;
      readonly hostId: number;
      readonly index: number;
    };

/** The supervisor's answer to `complete_task`. */
export interface CompleteTaskAnswer {
  readonly accepted: boolean;
  readonly message?: string;
}

/** What an engine may ask and tell the supervisor. */
export interface EngineHost {
  /** True once the supervisor is closing: lost agents are not restarted, dead threads not replaced. */
  closing(): boolean;
  report(report: AgentReport): void;
  /** The agent ended; the engine holds nothing of it any more. Called at most once per agent run. */
  ended(agentId: string, outcome: AgentOutcome): void;
  /**
   * The agent's runner is gone and the engine holds nothing of it. `'restart'`: the engine restarts
   * it from its journal, or ends it if it may not restart. `'ended'`: the supervisor settled it (it
   * had ended before, or the supervisor is closing). An outcome: the end the agent gets (it had
   * delivered its result, or it was being cancelled), which the engine settles through
   * {@link ended} with what the agent's journal says it spent, once the runner runs no more code,
   * writing its terminal event to a journal the runner left without one (a journal that ends
   * already gives its recorded outcome instead). Until then the agent is the supervisor's running one.
   */
  lost(agentId: string, cause: SerializedError): 'restart' | 'ended' | AgentOutcome;
  /** The agent called `complete_task` (engines whose agents ask the supervisor). */
  completeTask(agentId: string, result: unknown): Promise<CompleteTaskAnswer>;
  /**
   * The agent called a host tool: a user host tool or an orchestration tool. `callId` is the
   * model's id of the call (absent from redis workers of troupe 0.3): the supervisor runs each at
   * most once. `resume`: an agent restarted from its journal asks for the outcome of a call that
   * was cut off (answered `INTERRUPTED_TOOL_RESULT` when the supervisor has none), never running it.
   */
  callHostTool(
    agentId: string,
    name: string,
    args: Readonly<Record<string, unknown>>,
    callId?: string,
    resume?: boolean,
  ): Promise<ToolOutcome>;
  /**
   * Tool call `callId` of agent `agentId` starts at `at` (epoch ms), where the agent runs: the
   * W3C trace context of its `execute_tool` span, which the tool runs under; undefined when the
   * agent is not traced.
   */
  toolSpan(agentId: string, name: string, callId: string, at: number): ToolTraceContext | undefined;
  emit<K extends keyof EngineEvents>(name: K, ...args: EngineEvents[K]): void;
}

/** Options every engine gets, validated and filled in by the supervisor. */
export interface EngineOptions {
  readonly providers: Readonly<Record<string, ProviderConfig>>;
  /** Admission limits per provider key (the provider name). */
  readonly limits: Readonly<Record<string, ProviderLimits>>;
  readonly toolModules: readonly ToolModuleRef[];
  /** Restarts of an agent whose runner was lost. */
  readonly restart: RetryPolicy;
  /** Time an agent gets to end after a cancel, and a thread to shut down, before it is stopped by force. */
  readonly graceMs: number;
  /** Instructions an agent may have unread before a send is refused (`instruction_queue_full`). */
  readonly maxPendingInstructions: number;
  readonly cwd: string;
  /**
   * The supervisor's budget across its agents (`runLimits`; 0 = unlimited). The supervisor counts
   * it; an engine whose agents run out of its reach (redis) also stops them at it where they run.
   */
  readonly runLimits?: { readonly maxTotalTokens: number; readonly maxCostUsd: number };
}

/** What an engine is built with besides its options. */
export interface EngineContext {
  readonly host: EngineHost;
  /** Host tools the agents may call: the user's and the orchestration tools. */
  readonly hostTools: readonly HostToolDeclaration[];
}

/** Where an engine runs agents, for headers and diagnostics. */
export type EngineDescription =
  | { readonly backend: 'threads'; readonly threads: number }
  | {
      readonly backend: 'redis';
      /** The Redis URL, its password masked. */
      readonly url: string;
      readonly queue: string;
      readonly prefix: string;
      /** `troupe worker` processes (or threads) of the queue heard from in the last few seconds. */
      readonly workers: number;
    };

/** Runs actors. One per Supervisor; every method but `checkAgentId` and `start` runs after `start()`. */
export interface Engine {
  readonly backend: Backend;
  /** Throws UserError `invalid_agent_id` when `id` cannot name an agent on this engine. */
  checkAgentId(id: string): void;
  /** Starts threads or connects. Idempotent. */
  start(): Promise<void>;
  /** Places and starts (or resumes) an agent; it reports `started` once it runs. */
  run(spec: ActorSpec): void;
  /**
   * Delivers a message to an agent it runs. An instruction resolves with its index (instructions
   * are numbered from 0 per agent); a cancel with undefined. A cancel of an agent that has not
   * started yet ends it at once (through {@link EngineHost.ended}).
   */
  deliver(agentId: string, message: AgentMessage): Promise<number | undefined>;
  /** The agent did not end within the grace period after its cancel: end it by force. */
  stop(agentId: string, reason: string): void;
  /** The agent's journal as the engine stores it (a file or a stream); empty when it has none. */
  journal(agentId: string): Promise<AuditEvent[]>;
  /**
   * Starts agent `to`'s journal as a fork of agent `from`'s (src/journal/fork.ts): its events up to
   * its end, under the new id. Does nothing when `to` has a journal already (an earlier fork), or
   * `from` has none. All or nothing: a fork cut off half way leaves no journal. Resolves with what
   * the receipts `to` inherits from `from` add up to (`forkedTotals`), whether the fork is written
   * now or was already.
   */
  forkJournal(from: string, to: string): Promise<UsageTotals>;
  /**
   * Ends the journal of an agent nothing runs and nothing will (a resumed parent's descendant no
   * parent will await): appends the terminal event of `outcome` with what the journal says it
   * spent, and resolves with the outcome so filled in. A journal that already ends is left as it is
   * and its recorded outcome returned; one that cannot take it (damaged, gone) is left as it is.
   * Never rejects. Absent on an engine that cannot: such an agent is then left unfinished.
   */
  endJournal?(agentId: string, outcome: AgentOutcome): Promise<AgentOutcome>;
  /**
   * The journals it holds whose `Started` names `parentId` as their parent: what a parent resumed
   * in a new supervisor looks for when its journal shows a `spawn_agent` call cut off (the child's
   * id is only in the child's journal). Reads the first line of at most `bounds.maxJournals`
   * journals (see {@link JournalScanBounds.maxJournals}): parsed whole up to `bounds.maxBytes`, a
   * longer one scanned for its ids only up to `bounds.maxHeadBytes`; says which it did not
   * examine. Absent on an engine that cannot list its journals: such a call is then recorded as
   * interrupted.
   */
  childStarts?(parentId: string, bounds: JournalScanBounds): Promise<ChildStarts>;
  /** Memory of every thread this engine runs in this process (none for redis). */
  measure(): Promise<HostStats[]>;
  /** Where agents run: the thread count, or the queue and how many workers it has now. */
  describe(): Promise<EngineDescription>;
  /** Releases threads and connections. Called once every agent has ended. */
  close(): Promise<void>;
  /**
   * The supervisor has listeners for these optional signals now (the set only grows; before the
   * first call, none). An engine that implements it may leave the others unsent; one that does not
   * sends them all.
   */
  wantSignals?(kinds: readonly OptionalSignal[]): void;
  /**
   * With `runLimits`, when agent `agentId` has ended: `spent` is what it spent itself (its
   * outcome, built from its journal, less what a retry inherited). An engine that keeps a count of
   * its own where agents run (redis: the hash its workers add each receipt to and read before
   * each request) counts there what its receipts did not add (those journalled by a thread or
   * worker that died before counting them), so that count too ends equal to the outcomes. Absent
   * on an engine whose only count is the supervisor's.
   */
  countEnded?(agentId: string, spent: InheritedSpend): void;
}
