/**
 * Supervisor options: documented defaults, validated once into a readonly filled object. The
 * options of each engine are validated by that engine's module; this one checks the rest and puts
 * them together.
 */

import path from 'node:path';
import { fileBlockStore } from '../blocks/file-store.ts';
import type { BlockStore } from '../blocks/types.ts';
import { DEFAULT_APPROVAL_TIMEOUT_MS, MAX_RESTART_RETRIES, MAX_TIMER_MS } from '../constants.ts';
import { suggestion } from '../definition/fields.ts';
import type { AgentDefinition, PermissionMode, RetryPolicy } from '../definition/types.ts';
import { DEFAULT_MAX_PENDING_INSTRUCTIONS } from '../engines/actor/limits.ts';
import type { Backend, EngineOptions } from '../engines/engine.ts';
import {
  type PreparedRedisOptions,
  prepareRedisOptions,
  type RedisBackendOptions,
} from '../engines/redis/options.ts';
import {
  type PreparedThreadOptions,
  prepareThreadOptions,
  type ThreadBackendOptions,
} from '../engines/threads/options.ts';
import { describeValue, UserError } from '../errors.ts';
import type { UsageRecord, UsageSink } from '../loop/usage-record.ts';
import { type McpServers, mcpServersOption } from '../mcp/config.ts';
import { nonNegative, oneOf, positiveInt, timeLimit } from '../option-checks.ts';
import type { ProviderConfig, ProviderLimits, ToolModuleRef } from '../protocol/messages.ts';
import { registerConfiguredCredentials } from '../providers/credentials.ts';
import { providerFromEnvironment } from '../providers/environment.ts';
import { checkProviderOptions } from '../providers/factory.ts';
import { type ModelSettings, prepareModelSettings } from '../providers/model-settings.ts';
import { type ModelMap, parseModelMap } from '../providers/models.ts';
import type { TracingOptions } from '../telemetry/agent-tracing.ts';
import {
  COMPLETE_TASK,
  ORCHESTRATION_TOOL_NAMES,
  WAIT_FOR_INSTRUCTION,
} from '../tools/builtin/orchestration.ts';
import { type AgentPermissions, PERMISSION_MODES } from '../tools/permissions.ts';
import { tryParseRule } from '../tools/rules.ts';
import type { JsonSchema, ToolOutcome } from '../tools/types.ts';
import { withClaudeSettings } from './claude-permissions.ts';
import type { PreparedRunLimits, RunLimits } from './run-budget.ts';

/** Context a host tool runs with, on the supervisor (main thread). */
export interface HostToolContext {
  readonly agentId: string;
  readonly signal: AbortSignal;
}

/** A tool that runs on the supervisor; agents in every thread can call it by name. */
export interface HostTool {
  readonly description: string;
  readonly parameters: JsonSchema;
  /** @default false */
  readonly readOnly?: boolean;
  /**
   * Every call waits for a person's approval (docs/permissions.md); a function cannot be given here,
   * since the check runs where the agent runs. @default false
   */
  readonly needsApproval?: boolean;
  /**
   * Time limit of one call: then `ctx.signal` aborts with a `TimeoutError` and the call fails with
   * `<tool> did not finish within N ms (its time limit) and was abandoned...`, as a thread tool's
   * does (a tool that ignores the signal runs on, unawaited). An integer from 0 (no limit) to
   * 2147483647, else `invalid_option` when the Supervisor is built. A calling agent's definition's
   * `toolConfig.<tool>.timeoutMs` is used over it, as for a thread tool.
   * @default 600000 (`DEFAULT_TOOL_TIMEOUT_MS`)
   */
  readonly timeoutMs?: number;
  execute(
    args: Record<string, unknown>,
    ctx: HostToolContext,
  ): ToolOutcome | string | Promise<ToolOutcome | string>;
}

export type { RedisBackendOptions, ThreadBackendOptions };

/**
 * Options of {@link Supervisor}, all optional. They are checked when it is built: an unknown key or
 * a bad value throws UserError `invalid_option` (with the key a misspelt one may have meant).
 */
export interface SupervisorOptions extends ThreadBackendOptions, RedisBackendOptions {
  /**
   * `threads`: agents run in this process's worker threads (the `ThreadBackendOptions` apply).
   * `redis`: agents are BullMQ jobs run by `troupe worker` processes on any machine (the
   * `RedisBackendOptions` apply; thread options do not). The API and events are the same.
   * @default 'threads'
   */
  readonly backend?: Backend;
  /**
   * Providers by name. When omitted, the environment picks one the way the CLI does:
   * `OPENAI_API_KEY` or `OPENAI_BASE_URL` -> `{ openai: { kind: 'openai' } }`, else
   * `ANTHROPIC_API_KEY` -> `{ anthropic: { kind: 'anthropic' } }`, else the simulated model, which
   * the supervisor then announces once (a `provider:simulated` event and a process warning).
   * @default chosen from the environment
   */
  readonly providers?: Readonly<Record<string, ProviderConfig>>;
  /** Provider used when a spawn names none. @default the first key of `providers` */
  readonly defaultProvider?: string;
  /**
   * Model used when neither the spawn nor the definition names one (`default`, or `inherit` with no
   * parent). An alias is resolved like any other. @default 'default': the provider's default model
   */
  readonly defaultModel?: string;
  /**
   * Model aliases added or overridden (`{ sonnet: 'claude-sonnet-4-5' }`, or `openai:haiku` for one
   * provider), over the built-in tables (see providers/models.ts). @default {}
   */
  readonly modelMap?: Readonly<Record<string, string>>;
  /**
   * Model settings every agent starts from (temperature, maxOutputTokens, reasoningEffort...): the
   * lowest layer, under the definition's, the plan's and the spawn's, key by key. @default {}
   */
  readonly modelSettings?: ModelSettings;
  /**
   * Where the blocks definitions refer to (`instructions`, `settings`, `modelSettings: { id,
   * version }`) are found. They are resolved here, on the supervisor, when an agent is spawned, so
   * any store works with either engine (a `functionBlockStore` over a database included).
   * @default fileBlockStore({ cwd }): `.troupe/blocks` from `cwd` up to the git root, then `~/.troupe/blocks`
   */
  readonly blocks?: BlockStore;
  /**
   * MCP servers every agent may use (Claude Code's format, see mcp/config.ts), in addition to
   * `.mcp.json` at the project root; a server named in both is taken from here. @default {}
   */
  readonly mcpServers?: Readonly<Record<string, unknown>>;
  /** Read `.mcp.json` at the project root (the git root, else `cwd`). @default true */
  readonly mcpProjectFile?: boolean;
  /** Admission limits per provider key (the provider name). */
  readonly limits?: Readonly<Record<string, ProviderLimits>>;
  /** User tool modules, imported where the agents run (each thread, each worker). */
  readonly toolModules?: readonly ToolModuleRef[];
  /**
   * Tools that run on the supervisor, by name. The names of troupe's own tools that the supervisor
   * answers (`complete_task`, `wait_for_instruction`, `spawn_agent`, `send_instruction`,
   * `await_agents`) are refused with `invalid_option` when the Supervisor is built: the agents
   * would be given two tools of one name (each then failed `duplicate_tool` at its start).
   */
  readonly hostTools?: Readonly<Record<string, HostTool>>;
  /**
   * Restarts of an agent whose thread (or worker) died. On redis, `maxRetries` and `baseDelayMs`
   * set how often a job whose run failed is retried. `maxRetries` is an integer from 0 to 1000
   * (`MAX_RESTART_RETRIES`), the delays at most 2147483647 ms; anything else is `invalid_option`.
   * @default { maxRetries: 3, baseDelayMs: 50, maxDelayMs: 2000 }
   */
  readonly restart?: Partial<RetryPolicy>;
  /** Time an agent gets to end after a cancel (and a thread to shut down) before it is stopped by force. @default 5000 */
  readonly graceMs?: number;
  /**
   * Instructions an agent may have sent to it and not yet asked for (`wait_for_instruction`). A send
   * past it is refused: `instruct()` rejects with UserError `instruction_queue_full`, `handle.send()`
   * emits `agent:dropped`. Bounds the memory (or Redis stream) of an agent that never waits.
   * @default 10000
   */
  readonly maxPendingInstructions?: number;
  /**
   * Ended agents the supervisor keeps for lookups (`handle(id)`, `treeUsage(id)`), the most recently
   * ended ones; older ones are evicted. An evicted agent is unknown to the supervisor: `handle()` and
   * `treeUsage()` return undefined, `instruct()` rejects with UserError `unknown_agent`
   * (`agent_not_running` when you chose its id); its
   * handle, if you hold it, still works (`result` is settled). Its journal stays, and its id, when
   * you chose it, still cannot be spawned again (`duplicate_agent_id`). Kept whatever this says:
   * the ended children of an agent still running (its `await_agents` reads them) and the ended
   * ancestors of one (its usage rolls up through them). `Infinity` keeps every ended agent until
   * `close()`. Bounds the supervisor's memory under many thousands of agents (about 0.5 KB per
   * ended agent kept, plus its outcome). @default 1000
   */
  readonly retainEndedAgents?: number;
  /** Working directory for agents and definition discovery. @default process.cwd() */
  readonly cwd?: string;
  /** Definitions to use in addition to (and ahead of) discovered ones. */
  readonly definitions?: readonly AgentDefinition[];
  /** Read `.claude/agents` compat dirs during discovery. @default true */
  readonly compat?: boolean;
  /**
   * Add the `permissions` of Claude Code's settings files (`~/.claude/settings.json`, then the
   * project's `.claude/settings.json` and `.claude/settings.local.json`) under the `permissions`
   * option (docs/permissions.md). A file that does not read throws UserError `invalid_permissions`.
   * @default true
   */
  readonly claudeSettings?: boolean;
  /**
   * Limits for agents that spawn agents: `maxDepth` (nesting), `maxChildren` (subagents of one
   * agent), `maxSubagents` (subagents `spawn_agent` starts in one root agent's whole tree, 0 for no
   * bound; without it the other two allow 64 + 64² + 64³ agents). Past one, `spawn_agent` is
   * refused and the calling agent goes on.
   * @default { maxDepth: 3, maxChildren: 64, maxSubagents: 1000 }
   */
  readonly orchestration?: {
    readonly maxDepth?: number;
    readonly maxChildren?: number;
    readonly maxSubagents?: number;
  };
  /**
   * Receives one record per model request of every agent, as it ends: agent id, definition name
   * and content hash, block versions, model, usage, cost (null when unknown), the estimated flag,
   * the replay tag, times (see {@link UsageRecord}). An agent's records add up to its outcome's
   * usage and cost (less what a retry inherited): requests whose receipts its thread or worker
   * journalled but died before reporting come as one more record at the agent's end,
   * `unreported: true`, with their sum. Called on the supervisor's thread; what it throws or
   * rejects with is ignored. @default none
   */
  readonly usageSink?: UsageSink;
  /**
   * Budgets across every agent of this Supervisor, subagents included: total tokens and USD of
   * every model request. Once one is reached, `supervisor:budget` is emitted, every agent is
   * cancelled (requests in flight finish first, so a budget can be passed by what they use) and
   * later spawns fail with reason `budget` (code `run_token_budget` or `run_cost_budget`; one whose
   * `signal` is already aborted is cancelled instead).
   * `supervisor.runUsage` says what was used. Each agent's own `limits` bound it as well.
   * @default no budget (0 for either: unlimited)
   */
  readonly runLimits?: RunLimits;
  /**
   * OpenTelemetry traces (GenAI conventions, see docs/observability.md): spans go to `tracer`, by
   * default the tracer of the globally registered SDK, so an application that registers one gets
   * troupe's spans without setting anything; without an SDK nothing is recorded or forwarded.
   * `false` turns tracing off. Content (prompts, tool arguments and results) only with
   * `captureContent: true`. @default {}
   */
  readonly tracing?: TracingOptions | false;
  /**
   * Permissions of every agent, besides each definition's own (docs/permissions.md): rules in Claude
   * Code's syntax (deny wins over ask, ask over allow), a mode for definitions whose
   * `permissionMode` is `default`, and whether `bypassPermissions` may run at all. @default none
   */
  readonly permissions?: SupervisorPermissions;
  /** How calls that ask wait for decisions. */
  readonly approvals?: ApprovalOptions;
}

/** {@link SupervisorOptions.permissions}. */
export interface SupervisorPermissions {
  /** Mode of definitions whose `permissionMode` is `default`. @default 'default' */
  readonly mode?: PermissionMode;
  readonly allow?: readonly string[];
  readonly ask?: readonly string[];
  readonly deny?: readonly string[];
  /** Lets agents run in `bypassPermissions`; without it they fail with `bypass_not_allowed`. @default false */
  readonly allowBypass?: boolean;
}

/** {@link SupervisorOptions.approvals}. */
export interface ApprovalOptions {
  /**
   * How long a call waits for a decision; 0 = no limit. At most 2147483647 (`MAX_TIMER_MS`, about
   * 24.8 days: past it Node fires a timer at once), else `invalid_option`.
   * @default DEFAULT_APPROVAL_TIMEOUT_MS (10 minutes)
   */
  readonly timeoutMs?: number;
  /** What a timeout decides. @default 'deny' */
  readonly onTimeout?: 'deny' | 'allow';
  /**
   * A request nobody listens for (no `agent:approval` listener on the supervisor, no `approval`
   * listener on the agent's handle) is denied at once (`deny`), or waits for its timeout (`wait`:
   * for deciders elsewhere, such as `troupe approve` on the redis backend). @default 'deny'
   */
  readonly unattended?: 'deny' | 'wait';
}

/** Options with every default filled in. */
export interface PreparedSupervisorOptions extends EngineOptions, PreparedThreadOptions {
  readonly backend: Backend;
  readonly defaultProvider: string;
  readonly defaultModel: string;
  readonly modelMap: ModelMap;
  readonly modelSettings: ModelSettings;
  readonly blocks: BlockStore;
  readonly mcpServers: McpServers;
  readonly mcpProjectFile: boolean;
  /** True when no `providers` were given and the environment named none: the simulated model answers. */
  readonly simulatedFallback: boolean;
  readonly hostTools: Readonly<Record<string, HostTool>>;
  readonly definitions: readonly AgentDefinition[];
  readonly compat: boolean;
  readonly maxDepth: number;
  readonly maxChildren: number;
  /** 0: no bound. */
  readonly maxSubagents: number;
  readonly retainEndedAgents: number;
  readonly tracing: TracingOptions | false;
  /** Set with `backend: 'redis'`. */
  readonly redis: PreparedRedisOptions | undefined;
  readonly usageSink: UsageSink | undefined;
  readonly runLimits: PreparedRunLimits;
  /** What every agent gets besides its definition's permissions, timeouts included. */
  readonly permissions: AgentPermissions;
  readonly unattended: 'deny' | 'wait';
}

/** {@link SupervisorOptions.retainEndedAgents}. */
export const DEFAULT_RETAIN_ENDED_AGENTS = 1000;

/** Subagents `spawn_agent` may start in one root agent's tree (`orchestration.maxSubagents`). */
export const DEFAULT_MAX_SUBAGENTS = 1000;

const PROVIDER_KINDS = ['simulated', 'openai', 'anthropic', 'module'] as const;

/**
 * Checks a built-in provider's options here, where the Supervisor is made: else each thread finds
 * them bad when it builds the provider, and every agent fails. Its key is not checked (a provider
 * no agent uses may have none). A module provider's options are its factory's to check.
 */
function checkConfiguredOptions(name: string, config: ProviderConfig): void {
  const where = `providers.${name}.options`;
  const options: unknown = config.options;
  if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options)))
    throw new UserError(
      'invalid_option',
      `Expected \`${where}\` to be an object, got ${describeValue(options)}`,
      {
        option: where,
      },
    );
  if (config.kind === 'module') return;
  try {
    checkProviderOptions(config.kind, options ?? {});
  } catch (error) {
    if (!(error instanceof UserError) || typeof error.fields.option !== 'string') throw error;
    const option = `${where}.${error.fields.option}`;
    throw new UserError(
      'invalid_option',
      error.message.replace(`\`${error.fields.option}\``, `\`${option}\``),
      {
        ...error.fields,
        option,
      },
    );
  }
}

/**
 * Every key of {@link SupervisorOptions}: a record, so the compiler refuses a key the type lacks
 * and misses none the type has.
 */
const SUPERVISOR_OPTION_KEYS: Readonly<Record<keyof SupervisorOptions, true>> = {
  backend: true,
  providers: true,
  defaultProvider: true,
  defaultModel: true,
  modelMap: true,
  modelSettings: true,
  blocks: true,
  mcpServers: true,
  mcpProjectFile: true,
  limits: true,
  toolModules: true,
  hostTools: true,
  restart: true,
  graceMs: true,
  maxPendingInstructions: true,
  retainEndedAgents: true,
  cwd: true,
  definitions: true,
  compat: true,
  claudeSettings: true,
  orchestration: true,
  usageSink: true,
  runLimits: true,
  tracing: true,
  permissions: true,
  approvals: true,
  threads: true,
  isolation: true,
  maxAgentsPerThread: true,
  journalDir: true,
  fsync: true,
  heartbeat: true,
  threadStartTimeoutMs: true,
  resourceLimits: true,
  quarantineThreads: true,
  quarantineWaitMs: true,
  maxBystanderRestarts: true,
  execArgv: true,
  redisUrl: true,
  queueName: true,
  prefix: true,
  parkAfterMs: true,
  reconcileIntervalMs: true,
  retainSeconds: true,
  connectTimeoutMs: true,
  redisDownTimeoutMs: true,
  unservedAfterMs: true,
  maxBatchSize: true,
};
const OPTION_NAMES = Object.keys(SUPERVISOR_OPTION_KEYS);

/**
 * Refuses a key `SupervisorOptions` does not have (UserError `invalid_option`, field `option`): a
 * misspelt `runLimit` would otherwise leave the run without a budget, without a word.
 */
function checkOptionKeys(options: SupervisorOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new UserError(
      'invalid_option',
      `Expected Supervisor options to be an object, got ${describeValue(options)}`,
      {
        option: '',
      },
    );
  }
  for (const key of Object.keys(options)) {
    if (Object.hasOwn(SUPERVISOR_OPTION_KEYS, key)) continue;
    throw new UserError(
      'invalid_option',
      `Unknown Supervisor option \`${key}\`${suggestion(key, OPTION_NAMES)}; known: ${OPTION_NAMES.join(', ')}`,
      { option: key },
    );
  }
}

/** Tools the supervisor answers for every agent: a host tool may not take their names. */
const RESERVED_HOST_TOOL_NAMES: ReadonlySet<string> = new Set([
  COMPLETE_TASK,
  WAIT_FOR_INSTRUCTION,
  ...ORCHESTRATION_TOOL_NAMES,
]);

/** Validates options once and fills defaults. Throws UserError `invalid_option` (or `missing_redis_url`). */
export function prepareSupervisorOptions(options: SupervisorOptions = {}): PreparedSupervisorOptions {
  checkOptionKeys(options);
  const backend = oneOf('backend', options.backend, ['threads', 'redis'], 'threads');
  const fromEnvironment = options.providers === undefined ? providerFromEnvironment() : undefined;
  const providers = options.providers ?? {
    [fromEnvironment?.name ?? 'simulated']: { kind: fromEnvironment?.name ?? 'simulated' },
  };
  const providerNames = Object.keys(providers);
  const defaultProvider = options.defaultProvider ?? providerNames[0];
  if (defaultProvider === undefined || !(defaultProvider in providers)) {
    throw new UserError(
      'invalid_option',
      `Expected \`defaultProvider\` to name one of the providers (${providerNames.join(', ') || 'none'}), got ${describeValue(defaultProvider)}`,
      { option: 'defaultProvider' },
    );
  }
  for (const [name, config] of Object.entries(providers)) {
    oneOf(`providers.${name}.kind`, config.kind, PROVIDER_KINDS, 'simulated');
    checkConfiguredOptions(name, config);
    // This thread writes run directories and events: it masks the keys the agents' threads do.
    registerConfiguredCredentials(config.kind, config.options);
  }
  for (const [key, limit] of Object.entries(options.limits ?? {})) {
    if (typeof limit !== 'object' || limit === null || Array.isArray(limit)) {
      throw new UserError(
        'invalid_option',
        `Expected \`limits.${key}\` to be an object of provider limits, got ${describeValue(limit)}`,
        { option: `limits.${key}` },
      );
    }
    positiveInt(`limits.${key}.concurrency`, limit.concurrency, 1);
    positiveInt(`limits.${key}.tokensPerMinute`, limit.tokensPerMinute, 1);
    if (limit.requestsPerInterval !== undefined) {
      positiveInt(`limits.${key}.requestsPerInterval.count`, limit.requestsPerInterval.count, 1);
      // The window is a timer (p-queue's interval): past MAX_TIMER_MS it would end every 1 ms.
      timeLimit(
        `limits.${key}.requestsPerInterval.intervalMs`,
        limit.requestsPerInterval.intervalMs,
        1,
        'positive integer',
      );
    }
  }
  for (const [name, tool] of Object.entries(options.hostTools ?? {})) {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
      throw new UserError(
        'invalid_option',
        `Expected host tool names to match [a-zA-Z0-9_-]{1,64}, got ${describeValue(name)}`,
        { option: `hostTools.${name}` },
      );
    }
    if (RESERVED_HOST_TOOL_NAMES.has(name)) {
      throw new UserError(
        'invalid_option',
        `Expected a host tool name other than troupe's own ${[...RESERVED_HOST_TOOL_NAMES].join(', ')}, got ${describeValue(name)}: the agents would have two tools of that name; give yours another`,
        { option: `hostTools.${name}` },
      );
    }
    const timeoutMs: unknown = (tool as { timeoutMs?: unknown } | undefined)?.timeoutMs;
    if (
      timeoutMs !== undefined &&
      !(
        typeof timeoutMs === 'number' &&
        Number.isInteger(timeoutMs) &&
        timeoutMs >= 0 &&
        timeoutMs <= MAX_TIMER_MS
      )
    ) {
      throw new UserError(
        'invalid_option',
        `Expected \`hostTools.${name}.timeoutMs\` to be an integer from 0 (no limit) to ${MAX_TIMER_MS}, got ${describeValue(timeoutMs)}`,
        { option: `hostTools.${name}.timeoutMs` },
      );
    }
  }
  const mcpServers: McpServers = options.mcpServers === undefined ? {} : mcpServersOption(options.mcpServers);
  const modelMap = options.modelMap === undefined ? {} : parseModelMap(options.modelMap);
  const modelSettings = prepareModelSettings(options.modelSettings, 'modelSettings');
  const blocks = options.blocks ?? fileBlockStore({ cwd: path.resolve(options.cwd ?? process.cwd()) });
  if (typeof blocks.versions !== 'function' || typeof blocks.read !== 'function') {
    throw new UserError(
      'invalid_option',
      'Expected `blocks` to be a block store (`fileBlockStore`, `memoryBlockStore`, `functionBlockStore`, or an object with `versions` and `read`)',
      { option: 'blocks' },
    );
  }
  const redis = backend === 'redis' ? prepareRedisOptions(options) : undefined;
  const restart = {
    maxRetries: positiveInt('restart.maxRetries', options.restart?.maxRetries, 3, 0, MAX_RESTART_RETRIES),
    baseDelayMs: timeLimit('restart.baseDelayMs', options.restart?.baseDelayMs, 50),
    maxDelayMs: timeLimit('restart.maxDelayMs', options.restart?.maxDelayMs, 2000),
  };
  const graceMs = timeLimit('graceMs', options.graceMs, 5000);
  const maxDepth = positiveInt('orchestration.maxDepth', options.orchestration?.maxDepth, 3);
  const maxChildren = positiveInt('orchestration.maxChildren', options.orchestration?.maxChildren, 64);
  const maxSubagents = positiveInt(
    'orchestration.maxSubagents',
    options.orchestration?.maxSubagents,
    DEFAULT_MAX_SUBAGENTS,
    0,
  );
  const ownPermissions = preparePermissions(options.permissions, options.approvals);
  const permissions =
    options.claudeSettings === false
      ? ownPermissions
      : withClaudeSettings(ownPermissions, path.resolve(options.cwd ?? process.cwd()));
  const unattended = oneOf<'deny' | 'wait'>(
    'approvals.unattended',
    options.approvals?.unattended,
    ['deny', 'wait'],
    'deny',
  );
  const maxPendingInstructions = positiveInt(
    'maxPendingInstructions',
    options.maxPendingInstructions,
    DEFAULT_MAX_PENDING_INSTRUCTIONS,
  );
  const retainEndedAgents =
    options.retainEndedAgents === Number.POSITIVE_INFINITY
      ? Number.POSITIVE_INFINITY
      : positiveInt('retainEndedAgents', options.retainEndedAgents, DEFAULT_RETAIN_ENDED_AGENTS, 0);
  // Last: it creates the temporary journal directory, which an invalid option must not leave behind.
  const threads = prepareThreadOptions(options, backend === 'threads');
  return {
    ...threads,
    backend,
    providers,
    defaultProvider,
    defaultModel: options.defaultModel ?? 'default',
    modelMap,
    modelSettings,
    blocks,
    mcpServers,
    mcpProjectFile: options.mcpProjectFile ?? true,
    tracing: options.tracing ?? {},
    simulatedFallback: fromEnvironment?.name === 'simulated',
    limits: options.limits ?? {},
    toolModules: options.toolModules ?? [],
    hostTools: options.hostTools ?? {},
    restart,
    graceMs,
    maxPendingInstructions,
    retainEndedAgents,
    cwd: path.resolve(options.cwd ?? process.cwd()),
    definitions: options.definitions ?? [],
    compat: options.compat ?? true,
    maxDepth,
    maxChildren,
    maxSubagents,
    redis,
    usageSink: options.usageSink,
    runLimits: {
      maxTotalTokens: nonNegative('runLimits.maxTotalTokens', options.runLimits?.maxTotalTokens, 0),
      maxCostUsd: nonNegative('runLimits.maxCostUsd', options.runLimits?.maxCostUsd, 0),
    },
    permissions,
    unattended,
  };
}

/** Checks permission and approval options; every rule must be readable. */
export function preparePermissions(
  permissions: SupervisorPermissions = {},
  approvals: ApprovalOptions = {},
  option = 'permissions',
): AgentPermissions {
  const mode =
    permissions.mode === undefined
      ? undefined
      : oneOf(`${option}.mode`, permissions.mode, PERMISSION_MODES, 'default');
  const rules = (list: 'allow' | 'ask' | 'deny'): readonly string[] | undefined => {
    const entries = permissions[list];
    if (entries === undefined) return undefined;
    if (!Array.isArray(entries)) {
      throw new UserError(
        'invalid_option',
        `Expected \`${option}.${list}\` to be a list of rules, got ${describeValue(entries)}`,
        { option: `${option}.${list}` },
      );
    }
    return entries.map((entry: unknown, index) => {
      const name = `${option}.${list}[${index}]`;
      if (typeof entry !== 'string') {
        throw new UserError(
          'invalid_option',
          `Expected \`${name}\` to be a rule, got ${describeValue(entry)}`,
          {
            option: name,
          },
        );
      }
      const parsed = tryParseRule(entry);
      if ('error' in parsed) {
        throw new UserError('invalid_option', `\`${name}\`: ${parsed.error.message}`, { option: name });
      }
      return parsed.rule.raw;
    });
  };
  const allow = rules('allow');
  const ask = rules('ask');
  const deny = rules('deny');
  if (permissions.allowBypass !== undefined && typeof permissions.allowBypass !== 'boolean') {
    throw new UserError(
      'invalid_option',
      `Expected \`${option}.allowBypass\` to be true or false, got ${describeValue(permissions.allowBypass)}`,
      { option: `${option}.allowBypass` },
    );
  }
  return {
    ...(mode === undefined ? {} : { mode }),
    ...(allow === undefined ? {} : { allow }),
    ...(ask === undefined ? {} : { ask }),
    ...(deny === undefined ? {} : { deny }),
    allowBypass: permissions.allowBypass === true,
    // Past the longest timer delay Node fires at once: every approval timed out at once.
    approvalTimeoutMs: timeLimit('approvals.timeoutMs', approvals.timeoutMs, DEFAULT_APPROVAL_TIMEOUT_MS),
    onTimeout: oneOf<'deny' | 'allow'>('approvals.onTimeout', approvals.onTimeout, ['deny', 'allow'], 'deny'),
  };
}

/** The permissions of one spawn: the supervisor's, with the spawn's rules added and its mode first. */
export function spawnPermissions(
  base: AgentPermissions,
  extra: AgentPermissions | undefined,
): AgentPermissions {
  if (extra === undefined) return base;
  const join = (list: 'allow' | 'ask' | 'deny'): readonly string[] => [
    ...(base[list] ?? []),
    ...(extra[list] ?? []),
  ];
  return {
    ...base,
    ...(extra.mode === undefined ? {} : { mode: extra.mode }),
    allow: join('allow'),
    ask: join('ask'),
    deny: join('deny'),
  };
}
