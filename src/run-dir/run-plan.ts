/**
 * The resolved plan a run directory keeps in `plan.json`: every run with its agent id, the
 * provider and defaults actually used. `troupe resume` reruns from this file (and the run
 * directory's copy of the tasks file's rows, `tasks.jsonl`) alone, so later edits to the plan or
 * its tasks file do not change an interrupted run.
 */
import { randomBytes } from 'node:crypto';
import { DEFAULT_RUN_MAX_TOTAL_TOKENS } from '../constants.ts';
import type { ScorerSpec } from '../eval/types.ts';
import type { AgentLimits } from '../loop/types.ts';
import type { McpServers } from '../mcp/config.ts';
import type { ToolModuleRef } from '../protocol/messages.ts';
import { type ModelSettings, mergeModelSettings } from '../providers/model-settings.ts';
import type { ModelMap } from '../providers/models.ts';
import { DEFAULT_PRICES, type PriceTable, priceFor } from '../providers/pricing.ts';
import { DEFAULT_FANOUT_CONCURRENCY, DEFAULT_THREADS, RUN_DIR_FORMAT } from './constants.ts';
import { mergeRunPermissions, type RunApprovals, type RunPermissions } from './plan-permissions.ts';
import type { Plan, PlanRun } from './plan-types.ts';
import type { ProviderChoice } from './provider-choice.ts';
import type { TaskRows } from './task-rows.ts';

/**
 * One planned agent run with the id its first attempt gets. A tasks-file row holds where its line
 * is in the run directory's `tasks.jsonl` (`row`), not its inputs: read them with `inputsOf`.
 */
export type PlannedRun = PlanRun & {
  /** Agent id of the first attempt (`<id prefix>-<index>`); a rerun of a cancelled attempt adds `-r<n>`. */
  readonly agentId: string;
};

/** `plan.json`. */
export interface RunPlan {
  readonly format: typeof RUN_DIR_FORMAT;
  /** `<UTC timestamp>-<id>`, also the run directory's default name. */
  readonly runId: string;
  /** The random part of the run id; agent ids start with it. */
  readonly idPrefix: string;
  readonly createdAt: string;
  readonly name?: string;
  /** Absolute path of the plan file; null for runs started by a program (the demo). */
  readonly planFile: string | null;
  readonly cwd: string;
  readonly provider: ProviderChoice;
  /** Model every agent of the plan runs with; undefined = each definition's, else the provider's default. */
  readonly model?: string;
  readonly defaultModel?: string;
  /** Model aliases added or overridden (plan `modelMap`, then `--model-map`). */
  readonly modelMap?: ModelMap;
  /**
   * Model settings of every run: the plan's `modelSettings` with `--temperature`... over them. A
   * run's own `modelSettings` win over these.
   */
  readonly modelSettings?: ModelSettings;
  /** MCP servers of the plan (`.mcp.json` at the project root is read as well). */
  readonly mcpServers?: McpServers;
  readonly threads: number;
  readonly isolation: 'shared' | 'thread';
  /** Set when agents run on the redis engine (`--backend redis`); absent: threads. */
  readonly backend?: 'redis';
  /** The redis engine's queue (`--queue`), when not the default: `troupe resume` uses it too. */
  readonly redisQueue?: string;
  /** The redis engine's key prefix (`--prefix`), when not the default. */
  readonly redisPrefix?: string;
  /**
   * The redis engine's `retainSeconds` (`--retain-seconds`), when given: `troupe resume` uses it
   * unless it is given its own (which is recorded here from then on).
   */
  readonly redisRetainSeconds?: number;
  readonly concurrency: number;
  readonly limits?: AgentLimits;
  /** Budgets of the whole run (all agents, all sessions); absent in older run directories (defaults apply). */
  readonly runLimits?: RunLimits;
  readonly agentFiles: readonly string[];
  readonly toolModules: readonly ToolModuleRef[];
  readonly runs: readonly PlannedRun[];
  /** Where the rows of entries with a `row` are: set for a plan over a tasks file. */
  readonly taskRows?: TaskRows;
  /**
   * Scorers applied to each run as it finishes (absent when the plan declares none). `troupe score`
   * replaces them when it re-scores the run with another plan's scorers.
   */
  readonly scorers?: readonly ScorerSpec[];
  /** Set for a replay (`troupe replay`): what each entry replays. */
  readonly replay?: RunReplay;
  /** Permissions of every agent: the plan's, then the command line's (`--allow`, `--ask`, `--deny`, `--permissions`). */
  readonly permissions?: RunPermissions;
  /** How calls wait for decisions (the plan's `approvals`, `--approval-timeout`). */
  readonly approvals?: RunApprovals;
}

/** `plan.json` `replay`: what a replay run re-runs (src/run-dir/replay-plan.ts). */
export interface RunReplay {
  /** The recorded run directory or journal file (absolute). */
  readonly of: string;
  /** By plan index: the recorded journal the entry replays; null for an entry that never ran. */
  readonly journals: readonly (string | null)[];
  /** `--agent`: the definition file or name the entries run on instead of the recorded one. */
  readonly agent?: string;
}

/** Budgets of a whole run, over every agent and session. 0 means unlimited. */
export interface RunLimits {
  /** Input + output tokens of every agent. @default DEFAULT_RUN_MAX_TOTAL_TOKENS (10,000,000) */
  readonly maxTotalTokens: number;
  /** USD over every agent whose model has a known price. @default 0 (unlimited) */
  readonly maxCostUsd: number;
}

/**
 * Warnings about budgets the run cannot enforce: a cost budget (the run's or the agents') when no
 * price is known for the plan's model. A provider module's prices cannot be known here.
 */
export function budgetNotices(plan: RunPlan): string[] {
  const runCost = runLimitsOf(plan).maxCostUsd;
  const agentCost = plan.limits?.maxCostUsd ?? 0;
  const model = plan.model ?? plan.defaultModel;
  if ((runCost <= 0 && agentCost <= 0) || model === undefined) return [];
  const { config } = plan.provider;
  if (config.kind === 'simulated') return [];
  const table = config.options?.prices as PriceTable | undefined;
  const known = config.kind !== 'module' && priceFor(model, table ?? DEFAULT_PRICES) !== undefined;
  if (known) return [];
  const which =
    runCost > 0 ? `the run's cost budget ($${runCost})` : `the agents' cost budget ($${agentCost})`;
  return [
    `${which} cannot be enforced: no price is known for model ${model}, so its cost is unknown; the token budgets still apply`,
  ];
}

/**
 * A warning when plan entries share an `id` (a data set with repeated ids): such entries are still
 * run and scored, but `troupe show` needs their agent ids, and `troupe compare` and `troupe score
 * --plan` match the n-th with the n-th.
 */
export function repeatedIdNotices(plan: Pick<RunPlan, 'runs'>): string[] {
  const entries = new Map<string, number[]>();
  for (const run of plan.runs) {
    if (run.label === undefined) continue;
    const indexes = entries.get(run.label);
    if (indexes === undefined) entries.set(run.label, [run.index]);
    else indexes.push(run.index);
  }
  const repeated = [...entries].filter(([, indexes]) => indexes.length > 1);
  if (repeated.length === 0) return [];
  const shown = repeated
    .slice(0, 5)
    .map(
      ([label, indexes]) =>
        `\`${label}\` (entries ${indexes.slice(0, 5).join(', ')}${indexes.length > 5 ? ', ...' : ''})`,
    );
  return [
    `${repeated.length} id(s) name more than one plan entry: ${shown.join(', ')}${repeated.length > 5 ? ', ...' : ''}; troupe show needs their agent ids, and compare matches the n-th with the n-th`,
  ];
}

/** The run budgets of `plan`, with the defaults for what it (or an older plan.json) leaves out. */
export function runLimitsOf(plan: Pick<RunPlan, 'runLimits'>): RunLimits {
  return plan.runLimits ?? { maxTotalTokens: DEFAULT_RUN_MAX_TOTAL_TOKENS, maxCostUsd: 0 };
}

/** What the command line adds to or overrides in a plan. */
export interface RunOverrides {
  readonly threads?: number;
  readonly isolation?: 'shared' | 'thread';
  readonly backend?: 'threads' | 'redis';
  readonly redisQueue?: string;
  readonly redisPrefix?: string;
  /** `--retain-seconds` (redis engine). */
  readonly redisRetainSeconds?: number;
  readonly concurrency?: number;
  readonly model?: string;
  readonly modelMap?: ModelMap;
  /** `--temperature`, `--reasoning-effort`...: over the plan's `modelSettings`, key by key. */
  readonly modelSettings?: ModelSettings;
  /** `--max-run-tokens`. */
  readonly maxRunTokens?: number;
  /** Rules, mode and bypass consent from the command line, added to the plan's. */
  readonly permissions?: RunPermissions;
  /** `--approval-timeout` (ms). */
  readonly approvalTimeoutMs?: number;
}

/** Run id for a run started at `now`: `20250607-120102-3fa9c1` (UTC). */
export function newRunId(now: Date = new Date()): { runId: string; idPrefix: string } {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const idPrefix = randomBytes(3).toString('hex');
  return { runId: `${stamp}-${idPrefix}`, idPrefix };
}

/** Agent id of plan run `index`, attempt `attempt` (1-based). */
export function agentIdFor(idPrefix: string, index: number, attempt = 1): string {
  return attempt <= 1 ? `${idPrefix}-${index}` : `${idPrefix}-${index}-r${attempt}`;
}

/** Builds `plan.json` for a plan, the provider chosen for it and the command-line overrides. */
export function resolveRunPlan(
  plan: Plan,
  provider: ProviderChoice,
  overrides: RunOverrides,
  defaultModel: string | undefined,
  now: Date = new Date(),
): RunPlan {
  const { runId, idPrefix } = newRunId(now);
  const model = overrides.model ?? plan.model;
  const modelMap =
    plan.modelMap === undefined && overrides.modelMap === undefined
      ? undefined
      : { ...(plan.modelMap ?? {}), ...(overrides.modelMap ?? {}) };
  const modelSettings = mergeModelSettings(plan.modelSettings, overrides.modelSettings);
  return {
    format: RUN_DIR_FORMAT,
    runId,
    idPrefix,
    createdAt: now.toISOString(),
    ...(plan.name === undefined ? {} : { name: plan.name }),
    planFile: plan.file,
    cwd: plan.cwd,
    provider,
    ...(model === undefined ? {} : { model }),
    ...(defaultModel === undefined ? {} : { defaultModel }),
    ...(modelMap === undefined ? {} : { modelMap }),
    ...(Object.keys(modelSettings).length === 0 ? {} : { modelSettings }),
    ...(plan.mcpServers === undefined ? {} : { mcpServers: plan.mcpServers }),
    threads: overrides.threads ?? plan.threads ?? DEFAULT_THREADS,
    isolation: overrides.isolation ?? plan.isolation ?? 'shared',
    ...(overrides.backend === 'redis' ? { backend: 'redis' as const } : {}),
    ...(overrides.backend === 'redis' && overrides.redisQueue !== undefined
      ? { redisQueue: overrides.redisQueue }
      : {}),
    ...(overrides.backend === 'redis' && overrides.redisPrefix !== undefined
      ? { redisPrefix: overrides.redisPrefix }
      : {}),
    ...(overrides.backend === 'redis' && overrides.redisRetainSeconds !== undefined
      ? { redisRetainSeconds: overrides.redisRetainSeconds }
      : {}),
    concurrency: overrides.concurrency ?? plan.concurrency ?? DEFAULT_FANOUT_CONCURRENCY,
    ...(plan.limits === undefined ? {} : { limits: plan.limits }),
    runLimits: {
      maxTotalTokens:
        overrides.maxRunTokens ?? plan.runLimits?.maxTotalTokens ?? DEFAULT_RUN_MAX_TOTAL_TOKENS,
      maxCostUsd: plan.runLimits?.maxCostUsd ?? 0,
    },
    agentFiles: plan.agentFiles,
    toolModules: plan.toolModules,
    runs: plan.runs.map((run) => ({ ...run, agentId: agentIdFor(idPrefix, run.index) })),
    // The rows stay in the tasks file until RunDirWriter.create copies them into the run directory.
    ...(plan.tasks === undefined ? {} : { taskRows: { from: plan.tasks, file: plan.tasks } }),
    ...(plan.scorers.length === 0 ? {} : { scorers: plan.scorers }),
    ...permissionsOf(plan, overrides),
  };
}

function permissionsOf(
  plan: Plan,
  overrides: RunOverrides,
): { permissions?: RunPermissions; approvals?: RunApprovals } {
  const permissions = mergeRunPermissions(plan.permissions, overrides.permissions);
  const approvals =
    overrides.approvalTimeoutMs === undefined
      ? plan.approvals
      : { ...(plan.approvals ?? {}), timeoutMs: overrides.approvalTimeoutMs };
  return {
    ...(permissions === undefined ? {} : { permissions }),
    ...(approvals === undefined ? {} : { approvals }),
  };
}
