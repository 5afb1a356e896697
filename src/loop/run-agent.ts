/**
 * The agent loop's entry: prepares one agent (toolbox, system prompt, projection, limits, journal;
 * see start-run.ts) and runs it to exactly one terminal event (Completed or Failed), round by round, each round on a
 * fresh render of the projection. It knows nothing about threads: the same code runs in-process
 * and inside an actor host.
 */
import { followSignal } from '../abort.ts';
import type { BlockStore, ResolvedBlocks } from '../blocks/types.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { type SerializedError, serializeError } from '../errors.ts';
import type { AuditEvent, AuditEventInput, InstructionIndex } from '../journal/events.ts';
import { redactValue } from '../journal/redact.ts';
import type { JournalSink } from '../journal/sink.ts';
import type { McpServers } from '../mcp/config.ts';
import type { McpToolSource } from '../mcp/pool.ts';
import type { CounterName, TokenCounter } from '../projection/token-counter.ts';
import type { ModelSettings } from '../providers/model-settings.ts';
import type { Provider } from '../providers/types.ts';
import type { ReplayRecording } from '../replay/types.ts';
import type { AgentPermissions } from '../tools/permissions.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import { sleep as defaultSleep, type Sleep } from '../tools/retry.ts';
import { abortEnding, cancelled } from './decide.ts';
import { end, type LoopOptions, runLoop } from './loop.ts';
import { terminalEvent } from './outcome.ts';
import { runSession } from './session.ts';
import { type RunHandles, type StartedRun, startRun } from './start-run.ts';
import type { StopCondition } from './stop-conditions.ts';
import { WallClockExceeded } from './tool-calls.ts';
import type { AgentChannels, AgentLimits, AgentOutcome, FailureReason } from './types.ts';
import type { UsageSink } from './usage-record.ts';

/** Everything one agent run needs. */
export interface RunAgentOptions {
  readonly agentId: string;
  readonly parentId?: string;
  /** The parent's `spawn_agent` call that started the agent (journalled in Started). */
  readonly spawnCallId?: string;
  /** A resumed child's instructions delivered again at new indices (journalled in Resumed). */
  readonly instructionIndices?: readonly InstructionIndex[];
  readonly definition: AgentDefinition;
  readonly task: string;
  /** Fixed context sections, rendered before the task. */
  readonly context?: readonly string[];
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly provider: Provider;
  /** The model id sent to the provider (already resolved: see `resolveModel`). */
  readonly model: string;
  /**
   * What gave `model`, as a warning names it when the name cannot be a model id (`unknown_model`):
   * `troupe run` says `` `--model` ``. @default the definition's `model` when `model` is that
   * name as written, else "the model resolved for this run"
   */
  readonly modelSource?: string;
  /**
   * Model settings of this spawn (and plan): over the definition's, key by key. A resumed agent
   * ignores it and sends what its Started event recorded. @default {}
   */
  readonly modelSettings?: ModelSettings;
  /** Model settings under the definition's: the supervisor's (or the app's) defaults. @default {} */
  readonly defaultModelSettings?: ModelSettings;
  /**
   * Where the definition's blocks (`instructions`, `settings`, `modelSettings: { id, version }`)
   * are resolved when the agent starts. A resumed agent never asks it: it runs the versions its
   * Started event recorded. @default fileBlockStore({ cwd })
   */
  readonly blocks?: BlockStore;
  /** The definition's blocks, already resolved by whoever spawned the agent; `blocks` is then not asked. */
  readonly resolvedBlocks?: ResolvedBlocks;
  /**
   * Tools the agent may be given (subject to its definition's policy). `complete_task` and
   * `wait_for_instruction` are bound by the loop and replace any registered ones.
   * @default the built-in tools
   */
  readonly registry?: ToolRegistry;
  /** Working directory: file tools are confined to it; AGENTS.md and skills are found from it. */
  readonly cwd: string;
  /** Where `/path` tool rules start. @default the git root above `cwd`, else `cwd` */
  readonly projectRoot?: string;
  /**
   * MCP servers of the run (`.mcp.json`, supervisor, plan); the definition's own are added. Only
   * the servers whose tools the definition could be admitted to are started. @default {}
   */
  readonly mcpServers?: McpServers;
  /**
   * Where MCP connections come from: an actor host passes its thread's pool, shared by its agents.
   * @default a pool of this run's own, closed when the run ends
   */
  readonly mcp?: McpToolSource;
  readonly journal?: JournalSink;
  /** Events of an earlier run of this agent: the loop continues from them instead of starting. */
  readonly resumeFrom?: readonly AuditEvent[];
  /** Bytes of a torn journal line cut away before resuming (recorded in the Resumed event). */
  readonly truncatedBytes?: number;
  readonly signal?: AbortSignal;
  /** Steps, budgets and time; see {@link AgentLimits}. The defaults protect an unattended run. */
  readonly limits?: AgentLimits;
  /** Extra stop conditions, checked before every model request after the built-in limits. */
  readonly stopWhen?: readonly StopCondition[];
  /**
   * How `complete_task`, `wait_for_instruction` and approvals reach the runner. @default in-process;
   * without `requestApproval`, calls that ask are denied
   */
  readonly channels?: AgentChannels;
  /**
   * Permissions besides the definition's: rules, a mode for definitions in `default`, whether
   * `bypassPermissions` may run, and how long approvals wait (docs/permissions.md). @default none
   */
  readonly permissions?: AgentPermissions;
  /** Sees every audit event after it is journalled. */
  readonly onEvent?: (event: AuditEventInput) => void;
  /**
   * Receives one record per model request (agent, definition name and hash, model, usage, cost,
   * replay tag, times); see {@link UsageRecord}. What it throws is ignored.
   */
  readonly usageSink?: UsageSink;
  /** @default from the model name */
  readonly contextWindow?: number;
  /** @default the context window less the answer allowance */
  readonly maxInputTokens?: number;
  /** @default by model family */
  readonly counter?: CounterName | TokenCounter;
  /** Extra template variables for `full` prompts. */
  readonly promptParameters?: Readonly<Record<string, unknown>>;
  /** A system prompt assembled earlier for this definition and cwd. */
  readonly systemPrompt?: string;
  /**
   * Shares assembled system prompts between runs of the same definition, cwd and parameters
   * (hosts running many agents keep one), so AGENTS.md and skills are read once.
   */
  readonly promptCache?: Map<string, Promise<string>>;
  /** The definition's hash for the Started event, when the caller has it. @default computed */
  readonly definitionHash?: string;
  /**
   * Replay a recorded agent: its tool calls are answered from this recording by the rule of
   * src/replay/replay-calls.ts (recorded result, a read-only tool run live, or refused), and the
   * Started event records `recording.ref`. Required to resume a replay's journal.
   */
  readonly replay?: ReplayRecording;
  /**
   * Run as a session (src/loop/session.ts): each instruction `channels.waitForInstruction`
   * delivers is a user message, answered by one turn (TurnAnswered event, `onEvent`), and the
   * agent then waits for the next one; `task` is the session's standing instructions. A turn
   * alone is cancelled through `channels.turnSignal` (TurnCancelled event). A journal that started
   * as a session resumes as one. @default false
   */
  readonly session?: boolean;
  /** Waits between completion retries. @default a timer that stops on abort */
  readonly sleep?: Sleep;
  readonly random?: () => number;
}

/** Runs one agent to its outcome. Never throws for the agent's own failures: they are outcomes. */
export async function runAgent(options: RunAgentOptions): Promise<AgentOutcome> {
  // The run's signal: the caller's cancellation, and the time limit (wallClockMs). Without a time
  // limit the caller's signal is the run's: a second signal and its listener on the first would
  // cost every parked agent ~1 KB for nothing.
  const own = options.signal === undefined || mayLimitTime(options) ? new AbortController() : undefined;
  const signal = own?.signal ?? (options.signal as AbortSignal);
  const unfollow = own === undefined ? noop : followSignal(options.signal, own);
  let timer: ReturnType<typeof setTimeout> | undefined;
  // The run and its own MCP pool, as soon as each exists (a failure after that ends the run).
  const handles: RunHandles = {};

  try {
    let started: StartedRun | undefined = await startRun(options, signal, handles);
    if (started.kind === 'ended') return started.outcome;
    const { run, session, waitForMessage, wallClockMs } = started;
    // This frame stays suspended for the whole run: what it no longer needs is let go.
    started = undefined;
    if (wallClockMs > 0 && own !== undefined) {
      timer = setTimeout(() => {
        run.timedOut = true;
        own.abort(new WallClockExceeded(wallClockMs));
      }, wallClockMs);
    }
    const loopOptions =
      options.sleep === undefined && options.random === undefined
        ? DEFAULT_LOOP_OPTIONS
        : { sleep: options.sleep ?? defaultSleep, ...(options.random ? { random: options.random } : {}) };
    return session && waitForMessage
      ? await runSession(
          run,
          session,
          loopOptions,
          waitForMessage,
          options.channels?.turnSignal?.bind(options.channels),
        )
      : await runLoop(run, loopOptions);
  } catch (error) {
    if (handles.run && signal.aborted) return end(handles.run, abortEnding(handles.run));
    if (signal.aborted) return fail(options, handles, 'cancelled', cancelled(signal));
    const serialized = serializeError(error);
    return fail(options, handles, reasonOf(serialized), serialized);
  } finally {
    clearTimeout(timer);
    unfollow();
    await handles.ownPool?.close();
  }
}

const noop = (): void => {};
const DEFAULT_LOOP_OPTIONS: LoopOptions = { sleep: defaultSleep };

/** A bad request (a template, an option: a UserError) is `invalid_request`; anything else `crashed`. */
function reasonOf(error: SerializedError): FailureReason {
  return error.code === 'template_error' || error.name === 'UserError' ? 'invalid_request' : 'crashed';
}

/**
 * Ends an agent that never got to {@link runAgent} because what it runs with could not be built
 * (its provider: a bad option, a module that does not load): its one Failed event, journalled,
 * as runAgent ends a run that failed before it started.
 */
export function failBeforeRun(
  options: Pick<RunAgentOptions, 'agentId' | 'journal' | 'onEvent'>,
  error: unknown,
): AgentOutcome {
  const serialized = serializeError(error);
  return fail(options, {}, reasonOf(serialized), serialized);
}

/** Ends a run that failed: its terminal event, journalled and observed, even before it started. */
function fail(
  options: Pick<RunAgentOptions, 'agentId' | 'journal' | 'onEvent'>,
  handles: RunHandles,
  reason: FailureReason,
  error: SerializedError,
): AgentOutcome {
  if (handles.run) return end(handles.run, { kind: 'fail', reason, error });
  const outcome: AgentOutcome = {
    status: 'failed',
    agentId: options.agentId,
    reason,
    error: redactValue(error),
    usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
    costUsd: 0,
    rounds: 0,
    steps: 0,
  };
  const event = terminalEvent(outcome);
  options.journal?.append(event);
  options.journal?.commit?.();
  options.onEvent?.(event);
  return outcome;
}

/**
 * Whether the run may have a wall-clock limit: given in `limits`, or recorded by the journal it
 * resumes. Invalid values count as a limit (startRun rejects them).
 */
function mayLimitTime(options: RunAgentOptions): boolean {
  const first = options.resumeFrom?.[0];
  const recorded = first?.type === 'Started' ? first.limits : undefined;
  const wallClockMs: unknown = options.limits?.wallClockMs ?? recorded?.wallClockMs;
  return wallClockMs !== undefined && wallClockMs !== 0;
}
