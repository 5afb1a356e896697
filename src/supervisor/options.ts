/** Supervisor options: documented defaults, validated once into a readonly filled object. */
import { mkdtempSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import type { ResourceLimits } from 'node:worker_threads';
import type { AgentDefinition, RetryPolicy } from '../definition/types.ts';
import { describeValue, UserError } from '../errors.ts';
import type { ProviderConfig, ToolModuleRef } from '../protocol/messages.ts';
import { DEFAULT_MODELS } from '../providers/constants.ts';
import { providerFromEnvironment } from '../providers/environment.ts';
import type { JsonSchema, ToolOutcome } from '../tools/types.ts';
import type { ProviderLimits } from './admission.ts';

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
  execute(
    args: Record<string, unknown>,
    ctx: HostToolContext,
  ): ToolOutcome | string | Promise<ToolOutcome | string>;
}

/** Where the redis backend finds Redis and its queue (see docs/scaleout.md). */
export interface RedisBackendOptions {
  /** `redis://` or `rediss://` URL. @default `TROUPE_REDIS_URL` */
  readonly redisUrl?: string;
  /** BullMQ queue of agent jobs; workers must use the same. @default 'troupe-agents' */
  readonly queueName?: string;
  /** Key prefix; workers must use the same. @default 'troupe' */
  readonly prefix?: string;
  /** A `wait_for_instruction` longer than this parks its job (lock and worker slot released). @default 5000 */
  readonly parkAfterMs?: number;
  /** How often job state of running agents is read, in case a worker's end signal was lost. @default 1000 */
  readonly reconcileIntervalMs?: number;
  /** Keep jobs, journals and inboxes this many seconds after an agent ends. @default kept until deleted */
  readonly retainSeconds?: number;
  /** How long the first spawn waits for Redis before failing with `redis_unreachable`. @default 10000 */
  readonly connectTimeoutMs?: number;
}

export interface SupervisorOptions extends RedisBackendOptions {
  /**
   * `threads`: agents run in this process's worker threads. `redis`: agents are BullMQ jobs run by
   * `troupe worker` processes on any machine (the `RedisBackendOptions` apply; thread options do
   * not). The API and events are the same. @default 'threads'
   */
  readonly backend?: 'threads' | 'redis';
  /** Actor-host threads. @default 2 (or the core count when smaller) */
  readonly threads?: number;
  /** `shared`: many agents per thread; `thread`: one agent per thread at a time. @default 'shared' */
  readonly isolation?: 'shared' | 'thread';
  /** Agents one thread hosts at once under `shared`. @default 10000 */
  readonly maxAgentsPerThread?: number;
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
   * Model used when neither the spawn nor the definition names one.
   * @default the default provider's default model (`DEFAULT_MODELS`), 'default' for a module provider
   */
  readonly defaultModel?: string;
  /** Admission limits per provider key (the provider name). */
  readonly limits?: Readonly<Record<string, ProviderLimits>>;
  /** Where agent journals go. @default a new temp directory, removed by close() */
  readonly journalDir?: string;
  /**
   * Journal fsync policy. Every event is written with a synchronous write before the loop goes
   * on, so a crashed thread or process loses nothing under any policy; fsync only adds safety
   * against the machine itself going down, at a large cost per agent. @default 'never'
   */
  readonly fsync?: 'always' | 'interval' | 'never';
  /** User tool modules, imported inside every thread. */
  readonly toolModules?: readonly ToolModuleRef[];
  /** Tools that run on the supervisor. */
  readonly hostTools?: Readonly<Record<string, HostTool>>;
  /** Restarts of agents whose thread died. @default { maxRetries: 3, baseDelayMs: 50, maxDelayMs: 2000 } */
  readonly restart?: Partial<RetryPolicy>;
  /** A thread whose event loop does not answer for `timeoutMs` is terminated and its agents restarted. @default { intervalMs: 1000, timeoutMs: 20000 } */
  readonly heartbeat?: { readonly intervalMs?: number; readonly timeoutMs?: number };
  /** Per-thread V8 limits (an agent that exceeds them crashes its thread, which is restarted). */
  readonly resourceLimits?: ResourceLimits;
  /** Time a thread gets to answer a cancel or shutdown before it is terminated. @default 5000 */
  readonly graceMs?: number;
  /** Working directory for agents and definition discovery. @default process.cwd() */
  readonly cwd?: string;
  /** Definitions to use in addition to (and ahead of) discovered ones. */
  readonly definitions?: readonly AgentDefinition[];
  /** Read `.claude/agents` compat dirs during discovery. @default true */
  readonly compat?: boolean;
  /** Nesting limits for agents that spawn agents. @default { maxDepth: 3, maxChildren: 64 } */
  readonly orchestration?: { readonly maxDepth?: number; readonly maxChildren?: number };
  /**
   * Extra Node options for the threads, added to this process's own (e.g. `--conditions=...`).
   * V8-wide flags such as `--expose-gc` are not allowed in threads; `measureThreads()` collects
   * garbage without it.
   */
  readonly execArgv?: readonly string[];
}

/** Options with every default filled in. */
export interface PreparedSupervisorOptions {
  readonly threads: number;
  readonly isolation: 'shared' | 'thread';
  readonly maxAgentsPerThread: number;
  readonly providers: Readonly<Record<string, ProviderConfig>>;
  readonly defaultProvider: string;
  readonly defaultModel: string;
  /** True when no `providers` were given and the environment named none: the simulated model answers. */
  readonly simulatedFallback: boolean;
  readonly limits: Readonly<Record<string, ProviderLimits>>;
  readonly journalDir: string;
  readonly ownsJournalDir: boolean;
  readonly fsync: 'always' | 'interval' | 'never';
  readonly toolModules: readonly ToolModuleRef[];
  readonly hostTools: Readonly<Record<string, HostTool>>;
  readonly restart: RetryPolicy;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTimeoutMs: number;
  readonly resourceLimits: ResourceLimits | undefined;
  readonly graceMs: number;
  readonly cwd: string;
  readonly definitions: readonly AgentDefinition[];
  readonly compat: boolean;
  readonly maxDepth: number;
  readonly maxChildren: number;
  readonly execArgv: readonly string[];
}

function positiveInt(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new UserError(
      'invalid_option',
      `Expected \`${name}\` to be a positive integer, got ${describeValue(value)}`,
      {
        option: name,
      },
    );
  }
  return value;
}

function nonNegative(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new UserError(
      'invalid_option',
      `Expected \`${name}\` to be a non-negative number, got ${describeValue(value)}`,
      {
        option: name,
      },
    );
  }
  return value;
}

/** Validates options once and fills defaults. Throws UserError `invalid_option`. */
export function prepareSupervisorOptions(options: SupervisorOptions = {}): PreparedSupervisorOptions {
  const threads = positiveInt('threads', options.threads, Math.max(1, Math.min(2, availableParallelism())));
  const isolation = options.isolation ?? 'shared';
  if (isolation !== 'shared' && isolation !== 'thread') {
    throw new UserError(
      'invalid_option',
      `Expected \`isolation\` to be 'shared' or 'thread', got ${describeValue(isolation)}`,
      {
        option: 'isolation',
      },
    );
  }
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
    const kinds = ['simulated', 'openai', 'anthropic', 'module'];
    if (!kinds.includes(config.kind)) {
      throw new UserError(
        'invalid_option',
        `Expected \`providers.${name}.kind\` to be one of ${kinds.join(', ')}, got ${describeValue(config.kind)}`,
        {
          option: `providers.${name}.kind`,
        },
      );
    }
  }
  for (const key of Object.keys(options.limits ?? {})) {
    const limit = options.limits?.[key];
    if (limit?.concurrency !== undefined) positiveInt(`limits.${key}.concurrency`, limit.concurrency, 1);
    if (limit?.tokensPerMinute !== undefined)
      positiveInt(`limits.${key}.tokensPerMinute`, limit.tokensPerMinute, 1);
    if (limit?.requestsPerInterval !== undefined) {
      positiveInt(`limits.${key}.requestsPerInterval.count`, limit.requestsPerInterval.count, 1);
      positiveInt(`limits.${key}.requestsPerInterval.intervalMs`, limit.requestsPerInterval.intervalMs, 1);
    }
  }
  const fsync = options.fsync ?? 'never';
  if (!['always', 'interval', 'never'].includes(fsync)) {
    throw new UserError(
      'invalid_option',
      `Expected \`fsync\` to be 'always', 'interval' or 'never', got ${describeValue(fsync)}`,
      {
        option: 'fsync',
      },
    );
  }
  const heartbeatIntervalMs = positiveInt('heartbeat.intervalMs', options.heartbeat?.intervalMs, 1000);
  const heartbeatTimeoutMs = positiveInt('heartbeat.timeoutMs', options.heartbeat?.timeoutMs, 20_000);
  if (heartbeatTimeoutMs < heartbeatIntervalMs) {
    throw new UserError(
      'invalid_option',
      'Expected `heartbeat.timeoutMs` to be at least `heartbeat.intervalMs`',
      {
        option: 'heartbeat.timeoutMs',
      },
    );
  }
  for (const name of Object.keys(options.hostTools ?? {})) {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
      throw new UserError(
        'invalid_option',
        `Expected host tool names to match [a-zA-Z0-9_-]{1,64}, got ${describeValue(name)}`,
        {
          option: `hostTools.${name}`,
        },
      );
    }
  }
  const ownsJournalDir = options.journalDir === undefined;
  const journalDir = options.journalDir
    ? path.resolve(options.journalDir)
    : mkdtempSync(path.join(tmpdir(), 'troupe-journals-'));
  return {
    threads,
    isolation,
    maxAgentsPerThread: positiveInt('maxAgentsPerThread', options.maxAgentsPerThread, 10_000),
    providers,
    defaultProvider,
    defaultModel: options.defaultModel ?? defaultModelOf(providers[defaultProvider]),
    simulatedFallback: fromEnvironment?.name === 'simulated',
    limits: options.limits ?? {},
    journalDir,
    ownsJournalDir,
    fsync,
    toolModules: options.toolModules ?? [],
    hostTools: options.hostTools ?? {},
    restart: {
      maxRetries: nonNegative('restart.maxRetries', options.restart?.maxRetries, 3),
      baseDelayMs: nonNegative('restart.baseDelayMs', options.restart?.baseDelayMs, 50),
      maxDelayMs: nonNegative('restart.maxDelayMs', options.restart?.maxDelayMs, 2000),
    },
    heartbeatIntervalMs,
    heartbeatTimeoutMs,
    resourceLimits: options.resourceLimits,
    graceMs: nonNegative('graceMs', options.graceMs, 5000),
    cwd: path.resolve(options.cwd ?? process.cwd()),
    definitions: options.definitions ?? [],
    compat: options.compat ?? true,
    maxDepth: positiveInt('orchestration.maxDepth', options.orchestration?.maxDepth, 3),
    maxChildren: positiveInt('orchestration.maxChildren', options.orchestration?.maxChildren, 64),
    execArgv: options.execArgv ?? [],
  };
}

/** The model a provider answers with when nothing names one. */
function defaultModelOf(config: ProviderConfig | undefined): string {
  const kind = config?.kind;
  return kind === 'openai' || kind === 'anthropic' || kind === 'simulated' ? DEFAULT_MODELS[kind] : 'default';
}
