/**
 * The agent loop's entry: prepares one agent (toolbox, system prompt, projection, limits, journal)
 * and runs it to exactly one terminal event (Completed or Failed), round by round, each round on a
 * fresh render of the projection. It knows nothing about threads: the same code runs in-process
 * and inside an actor host.
 */
import { followSignal } from '../abort.ts';
import type { BlockStore, ResolvedBlocks } from '../blocks/types.ts';
import { DEFAULT_APPROVAL_TIMEOUT_MS } from '../constants.ts';
import { toolReferenceProblems } from '../definition/tool-references.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { type SerializedError, serializeError, UserError } from '../errors.ts';
import type { AuditEvent, AuditEventInput, EventOf, StartedWarning } from '../journal/events.ts';
import type { JournalSink } from '../journal/sink.ts';
import type { McpServers } from '../mcp/config.ts';
import { McpPool, type McpToolSet, type McpToolSource, serversForAgent } from '../mcp/pool.ts';
import { Projection } from '../projection/projection.ts';
import {
  type CounterName,
  counterForModel,
  heuristicCounter,
  o200kCounter,
  type TokenCounter,
} from '../projection/token-counter.ts';
import { assembleSystemPrompt } from '../prompt/assemble.ts';
import { projectDirs } from '../prompt/project-dirs.ts';
import { type ModelSettings, prepareModelSettings } from '../providers/model-settings.ts';
import type { Provider } from '../providers/types.ts';
import { ReplayCalls } from '../replay/replay-calls.ts';
import type { ReplayRecording } from '../replay/types.ts';
import { createToolRegistry } from '../tools/builtin/index.ts';
import { COMPLETE_TASK, WAIT_FOR_INSTRUCTION } from '../tools/builtin/orchestration.ts';
import { type AgentPermissions, effectiveMode } from '../tools/permissions.ts';
import { ToolRegistry } from '../tools/registry.ts';
import { sleep as defaultSleep, type Sleep } from '../tools/retry.ts';
import { buildToolbox } from '../tools/toolbox.ts';
import type { PromptTools } from '../tools/types.ts';
import { RunContext } from './context.ts';
import { abortEnding, cancelled } from './decide.ts';
import { countFixed } from './fixed-tokens.ts';
import { limitConditions, limitNotices, resolveLimits } from './limits.ts';
import { end, runLoop, terminalEvent } from './loop.ts';
import { contextWindowFor, maxInputFor } from './model-limits.ts';
import {
  definitionHashOf,
  pinnedDefinition,
  recordedBlocks,
  resolveStartSettings,
  startedDefinition,
} from './pinning.ts';
import { JOURNAL_FORMAT } from './projection-events.ts';
import { restoreFromJournal } from './resume.ts';
import { routedTools } from './routed-tools.ts';
import { newSession, restoreSession, runSession } from './session.ts';
import type { StopCondition } from './stop-conditions.ts';
import { WallClockExceeded } from './tool-calls.ts';
import type { AgentChannels, AgentLimits, AgentOutcome, FailureReason } from './types.ts';
import { type BlockVersion, deliverUsage, type UsageSink, usageRecord } from './usage-record.ts';

/** Everything one agent run needs. */
export interface RunAgentOptions {
  readonly agentId: string;
  readonly parentId?: string;
  readonly definition: AgentDefinition;
  readonly task: string;
  /** Fixed context sections, rendered before the task. */
  readonly context?: readonly string[];
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly provider: Provider;
  readonly model: string;
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
   * agent then waits for the next one; `task` is the session's standing instructions. A journal
   * that started as a session resumes as one. @default false
   */
  readonly session?: boolean;
  /** Waits between completion retries. @default a timer that stops on abort */
  readonly sleep?: Sleep;
  readonly random?: () => number;
}

/** Runs one agent to its outcome. Never throws for the agent's own failures: they are outcomes. */
export async function runAgent(options: RunAgentOptions): Promise<AgentOutcome> {
  // The run's own signal: the caller's cancellation, and the time limit (wallClockMs).
  const controller = new AbortController();
  const unfollow = followSignal(options.signal, controller);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const { agentId } = options;
  let definition = options.definition;
  let run: RunContext | undefined;
  const fail = (reason: FailureReason, error: SerializedError): AgentOutcome => {
    if (run) return end(run, { kind: 'fail', reason, error });
    const outcome: AgentOutcome = {
      status: 'failed',
      agentId,
      reason,
      error,
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
  };

  let ownPool: McpPool | undefined;
  try {
    const resume = options.resumeFrom;
    const started = resume?.[0]?.type === 'Started' ? resume[0] : undefined;
    if (resume) {
      const ended = resume.findLast((e) => e.type === 'Completed' || e.type === 'Failed');
      if (ended) return recordedOutcome(ended);
    }
    // A resumed agent runs what it started with: the recorded definition, blocks and settings.
    const pinned = started ? pinnedDefinition(started, options.definition) : undefined;
    if (pinned) definition = pinned.definition;
    const modelSettingsOptions = {
      overrides: prepareModelSettings(options.modelSettings, 'modelSettings'),
      defaults: prepareModelSettings(options.defaultModelSettings, 'defaultModelSettings'),
    };
    const start = started
      ? { blocks: recordedBlocks(started), modelSettings: started.modelSettings ?? {}, dropped: [] }
      : await resolveStartSettings({
          definition,
          cwd: options.cwd,
          provider: options.provider,
          model: options.model,
          ...(options.blocks ? { blocks: options.blocks } : {}),
          ...(options.resolvedBlocks ? { resolvedBlocks: options.resolvedBlocks } : {}),
          ...modelSettingsOptions,
        });
    const { blocks, modelSettings } = start;

    const replay = replayCalls(options.replay, started, resume);
    const session = options.session === true || started?.session === true ? newSession() : undefined;
    const waitForMessage = options.channels?.waitForInstruction;
    if (session && !waitForMessage) {
      throw new UserError(
        'session_without_channel',
        'A session needs channels.waitForInstruction: its user messages arrive there',
        { agentId },
      );
    }
    const definitionHashValue =
      started?.definition.hash ?? options.definitionHash ?? definitionHashOf(definition);
    const limits = resolveLimits(options.limits ?? started?.limits, definition.maxSteps);
    const permissions = options.permissions ?? {};
    checkBypass(definition, permissions);
    const channels = options.channels ?? {};
    const shared = options.registry ?? createToolRegistry();
    const servers = serversForAgent(definition, options.mcpServers ?? {});
    let mcp: McpToolSet = { tools: [], problems: [] };
    if (Object.keys(servers).length > 0) {
      let source = options.mcp;
      if (!source) {
        ownPool = new McpPool({ cwd: options.cwd });
        source = ownPool;
      }
      mcp = await source.toolsFor(servers, controller.signal);
    }
    const tools = [
      ...shared.list().filter((t) => t.name !== COMPLETE_TASK && t.name !== WAIT_FOR_INSTRUCTION),
      ...mcp.tools.filter((t) => !shared.has(t.name)),
      ...routedTools(
        () => {
          if (!run) throw new Error('the run is not ready');
          return run;
        },
        channels,
        definition.outputSchema,
      ),
    ];
    const registry = new ToolRegistry(tools);
    const warnings = checkToolReferences(definition, registry.names(), mcp);
    const projectRoot =
      options.projectRoot ??
      (needsProjectRoot(definition, permissions) ? (await projectDirs(options.cwd))[0] : undefined);
    const toolbox = buildToolbox(definition, registry, {
      cwd: options.cwd,
      agentId,
      settings: blocks.settings,
      permissions,
      ...(projectRoot === undefined ? {} : { projectRoot }),
    });
    const system =
      started?.systemPrompt ??
      options.systemPrompt ??
      (await systemPromptFor(options, definition, blocks, toolbox.promptTools));
    const counter = counterForModel(options.model, options.counter);
    const contextWindow = started?.contextWindow ?? options.contextWindow ?? contextWindowFor(options.model);
    const maxInputTokens = started?.maxInputTokens ?? options.maxInputTokens ?? maxInputFor(contextWindow);
    const toolsJson = JSON.stringify(toolbox.specs);
    const fixedTokens = countFixed(counter, system) + countFixed(counter, toolsJson);
    // Usage a server does not report is counted with a BPE tokenizer; o200k stands in for models
    // troupe has no tokenizer for (open models' tokenizers are close to it; chars/4 is not).
    const usageCounter = counter.name === heuristicCounter.name ? o200kCounter : counter;
    const context = started?.context ?? options.context ?? [];
    const task = started?.task ?? options.task;
    const projection = new Projection({ context, task, counter });
    const price = options.provider.priceOf?.(options.model);
    let timedOut = false;
    run = new RunContext({
      agentId,
      definition,
      provider: options.provider,
      model: options.model,
      modelSettings,
      system,
      toolbox,
      projection,
      signal: controller.signal,
      timedOut: () => timedOut,
      renderBudget: maxInputTokens - fixedTokens,
      limits,
      conditions: [...limitConditions(limits), ...(options.stopWhen ?? [])],
      usageCounter,
      fixedUsageTokens:
        usageCounter === counter
          ? fixedTokens
          : () => countFixed(usageCounter, system) + countFixed(usageCounter, JSON.stringify(toolbox.specs)),
      price,
      replay,
      session,
      ...(channels.requestApproval ? { approvalChannel: channels.requestApproval } : {}),
      approvalSettings: {
        timeoutMs: permissions.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
        onTimeout: permissions.onTimeout ?? 'deny',
      },
      journal: options.journal,
      observer: observerOf(options, definitionHashValue, replay, blocks.pinned),
    });

    if (resume && started) {
      await restoreFromJournal(run, resume, channels, options.truncatedBytes ?? 0, {
        ...(pinned?.changed ? { definitionChanged: pinned.changed } : {}),
        notices: pinned?.notices ?? [],
      });
      if (session) restoreSession(run, session, resume);
    } else {
      const notices = [...limitNotices(limits, options.model, price), ...start.dropped];
      run.record({
        type: 'Started',
        agentId,
        ...(options.parentId === undefined ? {} : { parentId: options.parentId }),
        definition: startedDefinition(definition, definitionHashValue),
        ...(blocks.pinned.length > 0 ? { blocks: blocks.pinned } : {}),
        ...(Object.keys(blocks.settings).length > 0 ? { settings: blocks.settings } : {}),
        ...(Object.keys(modelSettings).length > 0 ? { modelSettings } : {}),
        provider: options.provider.name,
        model: options.model,
        contextWindow,
        maxInputTokens,
        context,
        task,
        metadata: options.metadata ?? {},
        systemPrompt: system,
        toolSpecs: toolbox.specs,
        ...(warnings.length > 0 ? { warnings } : {}),
        limits,
        ...(notices.length > 0 ? { notices } : {}),
        format: JOURNAL_FORMAT,
        ...(replay ? { replay: replay.ref } : {}),
        ...(session ? { session: true } : {}),
      });
    }
    if (limits.wallClockMs > 0) {
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort(new WallClockExceeded(limits.wallClockMs));
      }, limits.wallClockMs);
    }
    const loopOptions = {
      sleep: options.sleep ?? defaultSleep,
      ...(options.random ? { random: options.random } : {}),
    };
    return session && waitForMessage
      ? await runSession(run, session, loopOptions, waitForMessage)
      : await runLoop(run, loopOptions);
  } catch (error) {
    if (run && controller.signal.aborted) return end(run, abortEnding(run));
    if (controller.signal.aborted) return fail('cancelled', cancelled(controller.signal));
    const serialized = serializeError(error);
    const reason: FailureReason =
      serialized.code === 'template_error' || serialized.name === 'UserError' ? 'invalid_request' : 'crashed';
    return fail(reason, serialized);
  } finally {
    clearTimeout(timer);
    unfollow();
    await ownPool?.close();
  }
}

/**
 * The definition's tool references checked against the tools this run really has (MCP tools of
 * the servers it reached included). An override naming no tool throws UserError
 * `unknown_tool_override` (the agent fails with `invalid_request`); the rest are warnings for the
 * Started event, with MCP servers that could not be reached.
 */
function checkToolReferences(
  definition: AgentDefinition,
  names: readonly string[],
  mcp: McpToolSet,
): StartedWarning[] {
  const unreached = mcp.problems.map((problem) => problem.server);
  const problems = toolReferenceProblems(definition, { names, unlistedMcpServers: unreached });
  const errors = problems.filter((problem) => problem.severity === 'error');
  if (errors.length > 0) {
    const lines = errors.map((p) => `${p.file}:${p.line}:${p.column}: ${p.message}`);
    throw new UserError('unknown_tool_override', lines.join('\n'), {
      problems: errors.map(({ code, message, file, line, column, path }) => ({
        code,
        message,
        file,
        line,
        column,
        path,
      })),
    });
  }
  return [
    ...problems.map(({ code, message, file, line, column, path }) => ({
      code,
      message,
      file,
      line,
      column,
      path,
    })),
    ...mcp.problems.map((problem) => ({ code: 'mcp_unavailable', message: problem.message })),
  ];
}

/** What sees the run's events: the caller's `onEvent`, and the usage sink on every receipt. */
function observerOf(
  options: RunAgentOptions,
  hash: string,
  replay: ReplayCalls | undefined,
  blocks: readonly BlockVersion[],
): ((event: AuditEventInput) => void) | undefined {
  const { onEvent, usageSink } = options;
  if (!usageSink) return onEvent;
  const identity = {
    agentId: options.agentId,
    parentId: options.parentId,
    definition: { name: options.definition.name, hash },
    provider: options.provider.name,
    model: options.model,
    replay: replay?.ref,
    blocks,
  };
  return (event) => {
    onEvent?.(event);
    if (event.type !== 'ProviderReceipt') return;
    const record = usageRecord(identity, {
      round: event.round,
      step: event.step,
      usage: event.receipt.usage,
      costUsd: event.receipt.costUsd ?? null,
      latencyMs: event.receipt.latencyMs,
      endedAt: Date.now(),
      ...(event.errorCode === undefined ? {} : { errorCode: event.errorCode }),
    });
    deliverUsage(usageSink, record);
  };
}

/**
 * The replay state of a run: undefined outside replays. A journal that started as a replay resumes
 * only with its recording (UserError `replay_recording_missing`: running its calls live would not be
 * a replay), and a recording cannot be applied to a journal that did not start as one
 * (`replay_mismatch`).
 */
function replayCalls(
  recording: ReplayRecording | undefined,
  started: EventOf<'Started'> | undefined,
  resume: readonly AuditEvent[] | undefined,
): ReplayCalls | undefined {
  if (started?.replay !== undefined && recording === undefined) {
    throw new UserError(
      'replay_recording_missing',
      `Agent ${started.agentId} replays ${started.replay.of}; resume it with that recording (troupe resume of its run directory, or the replay option)`,
      { agentId: started.agentId, of: started.replay.of },
    );
  }
  if (started !== undefined && started.replay === undefined && recording !== undefined) {
    throw new UserError(
      'replay_mismatch',
      `Agent ${started.agentId} did not start as a replay, so it cannot be resumed as one`,
      { agentId: started.agentId },
    );
  }
  return recording === undefined ? undefined : new ReplayCalls(recording, resume ?? []);
}

/** Whether a rule of the agent is written from the project root (`Read(/src/**)`). */
function needsProjectRoot(definition: AgentDefinition, extra: AgentPermissions): boolean {
  const own = definition.permissions;
  return [
    ...(definition.tools ?? []),
    ...definition.disallowedTools,
    ...own.allow,
    ...own.ask,
    ...own.deny,
    ...(extra.allow ?? []),
    ...(extra.ask ?? []),
    ...(extra.deny ?? []),
  ].some((entry) => /\(\/(?!\/)/.test(entry));
}

/**
 * Throws UserError `bypass_not_allowed` (the agent fails with `invalid_request`) when the agent
 * would run in `bypassPermissions` without the runner's consent.
 */
function checkBypass(definition: AgentDefinition, permissions: AgentPermissions): void {
  if (effectiveMode(definition.permissionMode, permissions.mode) !== 'bypassPermissions') return;
  if (permissions.allowBypass === true) return;
  throw new UserError(
    'bypass_not_allowed',
    `${definition.path}: agent \`${definition.name}\` asks for permissionMode bypassPermissions, which runs every call without asking; ` +
      'it runs only where the supervisor allows it (permissions.allowBypass, or --allow-bypass-permissions)',
    { agent: definition.name, file: definition.path },
  );
}

const definitionJsons = new WeakMap<AgentDefinition, string>();

function definitionJson(definition: AgentDefinition): string {
  let json = definitionJsons.get(definition);
  if (json === undefined) {
    json = JSON.stringify(definition);
    definitionJsons.set(definition, json);
  }
  return json;
}

async function systemPromptFor(
  options: RunAgentOptions,
  definition: AgentDefinition,
  blocks: ResolvedBlocks,
  tools: PromptTools,
): Promise<string> {
  const { prompt: block, settings } = blocks;
  const assemble = (): Promise<string> =>
    assembleSystemPrompt(definition, {
      cwd: options.cwd,
      tools,
      settings,
      ...(block
        ? {
            instructions: {
              text: block.text,
              file: block.source,
              firstLine: block.textLine,
              parameters: block.parameters,
            },
          }
        : {}),
      ...(options.promptParameters ? { parameters: options.promptParameters } : {}),
    });
  const cache = options.promptCache;
  if (!cache) return assemble();
  // The same text as JSON.stringify([definition, cwd, ...]), with the definition's part kept per
  // definition object: agents of one definition (one object in a host) share it.
  const rest = JSON.stringify([options.cwd, options.promptParameters ?? null, block ?? null, settings]);
  const key = `[${definitionJson(definition)},${rest.slice(1)}`;
  let prompt = cache.get(key);
  if (!prompt) {
    prompt = assemble();
    cache.set(key, prompt);
    // A failed assembly is not cached: the next agent gets the real error, not a stale one.
    prompt.catch(() => cache.delete(key));
  }
  return prompt;
}

/** The outcome a journal recorded for an agent that already ended. */
function recordedOutcome(ended: EventOf<'Completed'> | EventOf<'Failed'>): AgentOutcome {
  const totals = {
    usage: ended.usage,
    costUsd: ended.costUsd,
    rounds: ended.rounds,
    steps: ended.steps ?? ended.rounds,
    ...(ended.replay === undefined ? {} : { replay: ended.replay }),
  };
  return ended.type === 'Completed'
    ? { status: 'completed', agentId: ended.agentId, answer: ended.answer, result: ended.result, ...totals }
    : { status: 'failed', agentId: ended.agentId, reason: ended.reason, error: ended.error, ...totals };
}
