/**
 * The agent loop: runs one agent to exactly one terminal event (Completed or Failed), round by
 * round, each round on a fresh render of the projection. It knows nothing about threads: the same
 * code runs in-process and inside an actor host.
 */
import { DEFAULT_RECOVERY, HARD_MAX_STEPS } from '../constants.ts';
import { definitionHash } from '../definition/load.ts';
import { toolReferenceProblems } from '../definition/tool-references.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { type SerializedError, serializeError, UserError } from '../errors.ts';
import type { AuditEvent, AuditEventInput, StartedWarning } from '../journal/events.ts';
import type { JournalSink } from '../journal/sink.ts';
import type { McpServers } from '../mcp/config.ts';
import { McpPool, type McpToolSet, type McpToolSource, serversForAgent } from '../mcp/pool.ts';
import { Projection } from '../projection/projection.ts';
import { type CounterName, counterForModel, type TokenCounter } from '../projection/token-counter.ts';
import { assembleSystemPrompt } from '../prompt/assemble.ts';
import { projectDirs } from '../prompt/project-dirs.ts';
import type { Provider } from '../providers/types.ts';
import { createToolRegistry } from '../tools/builtin/index.ts';
import { COMPLETE_TASK, WAIT_FOR_INSTRUCTION } from '../tools/builtin/orchestration.ts';
import { ToolRegistry } from '../tools/registry.ts';
import { backoffDelay, sleep as defaultSleep, type Sleep } from '../tools/retry.ts';
import { buildToolbox } from '../tools/toolbox.ts';
import type { PromptTools } from '../tools/types.ts';
import { RunContext } from './context.ts';
import { contextWindowFor, maxInputFor } from './model-limits.ts';
import { JOURNAL_FORMAT } from './projection-events.ts';
import { restoreFromJournal } from './resume.ts';
import { type PendingCapture, runRound } from './round.ts';
import { routedTools } from './routed-tools.ts';
import { budget, firstVerdict, type StopCondition, stepCount } from './stop-conditions.ts';
import type { AgentChannels, AgentLimits, AgentOutcome, FailureReason } from './types.ts';

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
  readonly limits?: AgentLimits;
  /** Extra stop conditions, checked before every round after the built-in limits. */
  readonly stopWhen?: readonly StopCondition[];
  /** How `complete_task` and `wait_for_instruction` reach the runner. @default in-process */
  readonly channels?: AgentChannels;
  /** Sees every audit event after it is journalled. */
  readonly onEvent?: (event: AuditEventInput) => void;
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
  /** Waits between completion retries. @default a timer that stops on abort */
  readonly sleep?: Sleep;
  readonly random?: () => number;
}

/** Runs one agent to its outcome. Never throws for the agent's own failures: they are outcomes. */
export async function runAgent(options: RunAgentOptions): Promise<AgentOutcome> {
  const signal = options.signal ?? new AbortController().signal;
  const { definition, agentId } = options;
  let run: RunContext | undefined;
  const fail = (reason: FailureReason, error: SerializedError): AgentOutcome => {
    const totals = run?.totals;
    const outcome: AgentOutcome = {
      status: 'failed',
      agentId,
      reason,
      error,
      usage: totals?.usage ?? { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
      costUsd: totals?.costUsd ?? 0,
      rounds: run?.roundsUsed ?? 0,
    };
    const event: AuditEventInput = { type: 'Failed', ...withoutStatus(outcome) };
    if (run) run.record(event);
    else {
      options.journal?.append(event);
      options.onEvent?.(event);
    }
    return outcome;
  };

  let ownPool: McpPool | undefined;
  try {
    const resume = options.resumeFrom;
    const started = resume?.[0]?.type === 'Started' ? resume[0] : undefined;
    if (resume) {
      const ended = resume.findLast((e) => e.type === 'Completed' || e.type === 'Failed');
      if (ended?.type === 'Completed') return { status: 'completed', ...pick(ended) };
      if (ended?.type === 'Failed') {
        return { status: 'failed', agentId, reason: ended.reason, error: ended.error, ...usageOf(ended) };
      }
    }

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
      mcp = await source.toolsFor(servers, signal);
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
      options.projectRoot ?? (needsProjectRoot(definition) ? (await projectDirs(options.cwd))[0] : undefined);
    const toolbox = buildToolbox(definition, registry, {
      cwd: options.cwd,
      agentId,
      ...(projectRoot === undefined ? {} : { projectRoot }),
    });
    const system =
      started?.systemPrompt ?? options.systemPrompt ?? (await systemPromptFor(options, toolbox.promptTools));
    const counter = counterForModel(options.model, options.counter);
    const contextWindow = started?.contextWindow ?? options.contextWindow ?? contextWindowFor(options.model);
    const maxInputTokens = started?.maxInputTokens ?? options.maxInputTokens ?? maxInputFor(contextWindow);
    const fixedTokens = counter.count(system) + counter.count(JSON.stringify(toolbox.specs));
    const context = started?.context ?? options.context ?? [];
    const task = started?.task ?? options.task;
    const projection = new Projection({ context, task, counter });
    run = new RunContext({
      agentId,
      definition,
      provider: options.provider,
      model: options.model,
      system,
      toolbox,
      projection,
      signal,
      renderBudget: maxInputTokens - fixedTokens,
      journal: options.journal,
      observer: options.onEvent,
    });

    if (resume && started) {
      await restoreFromJournal(run, resume, channels, options.truncatedBytes ?? 0);
    } else {
      run.record({
        type: 'Started',
        agentId,
        ...(options.parentId === undefined ? {} : { parentId: options.parentId }),
        definition: {
          name: definition.name,
          hash: options.definitionHash ?? definitionHashOf(definition),
          path: definition.path,
        },
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
        ...(options.limits ? { limits: options.limits } : {}),
        format: JOURNAL_FORMAT,
      });
    }
    return await loop(run, options, fail);
  } catch (error) {
    const serialized = serializeError(error);
    if (signal.aborted) return fail('cancelled', cancelled(signal));
    const reason: FailureReason =
      serialized.code === 'template_error' || serialized.name === 'UserError' ? 'invalid_request' : 'crashed';
    return fail(reason, serialized);
  } finally {
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

/** Whether a rule of the definition is written from the project root (`Read(/src/**)`). */
function needsProjectRoot(definition: AgentDefinition): boolean {
  return [...(definition.tools ?? []), ...definition.disallowedTools].some((entry) =>
    /\(\/(?!\/)/.test(entry),
  );
}

async function loop(
  run: RunContext,
  options: RunAgentOptions,
  fail: (reason: FailureReason, error: SerializedError) => AgentOutcome,
): Promise<AgentOutcome> {
  const { definition } = run;
  const limits = options.limits ?? {};
  const maxSteps = Math.min(HARD_MAX_STEPS, limits.maxSteps ?? definition.maxSteps);
  const conditions: StopCondition[] = [stepCount(maxSteps), budget(limits), ...(options.stopWhen ?? [])];
  const requirement = definition.completionRequirement;
  const recovery = requirement?.recovery ?? DEFAULT_RECOVERY;
  const sleep = options.sleep ?? defaultSleep;
  let misses = 0;
  let forceTool = false;
  let capture: PendingCapture | undefined;

  const complete = (answer: string, result: unknown): AgentOutcome => {
    const outcome: AgentOutcome = {
      status: 'completed',
      agentId: run.agentId,
      answer,
      result,
      usage: run.totals.usage,
      costUsd: run.totals.costUsd,
      rounds: run.roundsUsed,
    };
    run.record({ type: 'Completed', ...withoutStatus(outcome) });
    return outcome;
  };
  if (run.completion) return complete(JSON.stringify(run.completion.value), run.completion.value);

  for (;;) {
    // A zero-latency model and synchronous tools would otherwise run every round as one chain of
    // microtasks, starving the thread's event loop: heartbeats and cancels could not get in.
    await yieldToEventLoop();
    if (run.signal.aborted) return fail('cancelled', cancelled(run.signal));
    const verdict = firstVerdict(conditions, {
      roundsUsed: run.roundsUsed,
      totalTokens: run.totalTokens,
      costUsd: run.totals.costUsd,
      elapsedMs: performance.now() - run.startedAt,
      succeededTools: run.succeededTools,
    });
    if (verdict?.kind === 'fail') return fail(verdict.reason, failure(verdict.code, verdict.message));
    if (verdict?.kind === 'complete') return complete(verdict.answer, undefined);
    if (!run.projection.fits(run.renderBudget)) {
      return fail(
        'budget',
        failure(
          'context_budget',
          `The input (${run.projection.estimatedTokens()} tokens) no longer fits the budget of ${run.renderBudget}`,
        ),
      );
    }

    const requiredModelName = requirement ? run.toolbox.modelName(requirement.tool) : undefined;
    const result = await runRound(run, {
      ...(capture ? { capture } : {}),
      ...(forceTool && requiredModelName ? { toolChoice: { tool: requiredModelName } } : {}),
    });
    const wasCapture = capture !== undefined;
    capture = result.capture;

    if (run.signal.aborted) return fail('cancelled', result.error ?? cancelled(run.signal));
    if (result.error) {
      if (result.error.code === 'cancelled') return fail('cancelled', result.error);
      return fail('provider_error', result.error);
    }
    const completion = run.acceptedCompletion();
    if (completion) return complete(JSON.stringify(completion.value), completion.value);
    if (capture || wasCapture) continue;
    if (result.stopReason === 'tool_calls') continue;
    if (result.succeeded > 0) misses = 0;

    if (requirement) {
      if (run.succeededTools.has(requirement.tool)) return complete(result.text, undefined);
      misses += 1;
      if (misses > recovery.maxRetries) {
        return fail(
          'model_behavior',
          failure(
            'completion_required',
            `The model ended ${misses} turns without calling \`${requiredModelName ?? requirement.tool}\`, which this agent must call to finish`,
          ),
        );
      }
      run.pushHistory(requirement.reminder, 'reminder');
      forceTool = misses === recovery.maxRetries;
      try {
        await sleep(
          Math.min(recovery.maxDelayMs, backoffDelay(recovery, misses - 1, options.random)),
          run.signal,
        );
      } catch {
        return fail('cancelled', cancelled(run.signal));
      }
      continue;
    }
    if (result.text.trim() !== '') return complete(result.text, undefined);
    if (result.toolCalls > 0) continue;
    return fail(
      'model_behavior',
      failure('empty_answer', 'The model answered with nothing and called no tool'),
    );
  }
}

const definitionHashes = new WeakMap<AgentDefinition, string>();

function definitionHashOf(definition: AgentDefinition): string {
  let hash = definitionHashes.get(definition);
  if (hash === undefined) {
    hash = definitionHash(definition);
    definitionHashes.set(definition, hash);
  }
  return hash;
}

async function systemPromptFor(options: RunAgentOptions, tools: PromptTools): Promise<string> {
  const assemble = (): Promise<string> =>
    assembleSystemPrompt(options.definition, {
      cwd: options.cwd,
      tools,
      ...(options.promptParameters ? { parameters: options.promptParameters } : {}),
    });
  const cache = options.promptCache;
  if (!cache) return assemble();
  const key = JSON.stringify([options.definition, options.cwd, options.promptParameters ?? null]);
  let prompt = cache.get(key);
  if (!prompt) {
    prompt = assemble();
    cache.set(key, prompt);
    // A failed assembly is not cached: the next agent gets the real error, not a stale one.
    prompt.catch(() => cache.delete(key));
  }
  return prompt;
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function failure(code: string, message: string): SerializedError {
  return { name: 'ModelBehaviorError', code, message, fields: {} };
}

function cancelled(signal: AbortSignal): SerializedError {
  const reason: unknown = signal.reason;
  const message =
    reason instanceof Error ? reason.message : reason === undefined ? 'cancelled' : String(reason);
  return { name: 'SystemError', code: 'cancelled', message: `Cancelled: ${message}`, fields: {} };
}

function withoutStatus<T extends { status: string }>(outcome: T): Omit<T, 'status'> {
  const { status: _status, ...rest } = outcome;
  return rest;
}

function usageOf(event: { usage: AgentOutcome['usage']; costUsd: number; rounds: number }) {
  return { usage: event.usage, costUsd: event.costUsd, rounds: event.rounds };
}

function pick(event: Extract<AuditEvent, { type: 'Completed' }>) {
  return { agentId: event.agentId, answer: event.answer, result: event.result, ...usageOf(event) };
}
