/** What a plan file resolves to: agent runs plus the defaults they run with. */
import type { ScorerSpec } from '../eval/types.ts';
import type { AgentLimits } from '../loop/types.ts';
import type { McpServers } from '../mcp/config.ts';
import type { ToolModuleRef } from '../protocol/messages.ts';
import type { ModelSettings } from '../providers/model-settings.ts';
import type { ModelMap } from '../providers/models.ts';
import type { RunApprovals, RunPermissions } from './plan-permissions.ts';

/** Where a run was declared: its entry in the plan, or its line in the tasks file. */
export interface SourceRef {
  /** Absolute path. */
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/** What an agent run is given, and what its output is scored against. */
export interface RunInputs {
  readonly task: string;
  readonly context: readonly string[];
  readonly metadata: Readonly<Record<string, unknown>>;
  /** What the scorers compare the agent's output with (`expected` in the plan or tasks file). */
  readonly expected?: unknown;
}

/**
 * Where a tasks-file row is kept: the bytes of its line in a JSONL file (without the line end),
 * read when the row's inputs are needed (see task-rows.ts).
 */
export interface RowRef {
  /** Byte offset of the line in the file. */
  readonly offset: number;
  /** Byte length of the line, without its `\n`. */
  readonly length: number;
  /**
   * `rowHash` (task-rows.ts) of the line's bytes when the plan was read (and, in `plan.json`, of the run
   * directory's copy): a row whose bytes changed since, even to others of the same length, is
   * refused with `tasks_changed`. Absent in run directories written before it existed.
   */
  readonly hash?: string;
}

/** What every run of a plan has, wherever its inputs are kept. */
interface PlanRunBase {
  /** 0-based position in the plan (or line order in the tasks file). */
  readonly index: number;
  /** Agent definition name. */
  readonly agent: string;
  /** The caller's id for this run (`id` in the plan or tasks file), e.g. a data-set item id. */
  readonly label?: string;
  /** This run's model settings (`modelSettings` of the entry or task line): over the plan's. */
  readonly modelSettings?: ModelSettings;
  readonly source: SourceRef;
}

/** A run whose inputs are part of the plan: a `runs:` entry (and every entry of an older run directory). */
export interface InlinePlanRun extends PlanRunBase, RunInputs {
  readonly row?: undefined;
}

/**
 * A tasks-file row: its inputs stay in the file and are read when needed, so a data set of 100,000
 * rows is not held in memory for the whole run.
 */
export interface StoredPlanRun extends PlanRunBase {
  readonly row: RowRef;
  /**
   * Set by `troupe score --plan` (with `taskRows.expectedFrom` in plan.json): the expected value that
   * replaces the row's.
   */
  readonly expected?: unknown;
}

/** One agent run of a plan. */
export type PlanRun = InlinePlanRun | StoredPlanRun;

/** A provider module: a file exporting a `(options) => Provider` factory. */
export interface ProviderModuleRef {
  /** Absolute path. */
  readonly module: string;
  /** @default 'default' */
  readonly export?: string;
}

/** A validated plan. Paths are absolute. Unset defaults are left undefined for the CLI to fill. */
export interface Plan {
  /** Absolute path of the plan file. */
  readonly file: string;
  readonly name?: string;
  /** Working directory of the agents (file tools are confined to it) and where agents are discovered. */
  readonly cwd: string;
  readonly provider?: string | ProviderModuleRef;
  readonly providerOptions?: Readonly<Record<string, unknown>>;
  readonly model?: string;
  /** Model aliases added or overridden (`sonnet: claude-sonnet-4-5`). */
  readonly modelMap?: ModelMap;
  /** Model settings of every run (`modelSettings`): over each definition's, under a run's own. */
  readonly modelSettings?: ModelSettings;
  /** MCP servers every agent of the plan may use (Claude Code's format). */
  readonly mcpServers?: McpServers;
  readonly threads?: number;
  readonly isolation?: 'shared' | 'thread';
  readonly concurrency?: number;
  readonly limits?: AgentLimits;
  /** Budgets of the whole run (`runLimits` in the plan); unset ones take the defaults. */
  readonly runLimits?: { readonly maxTotalTokens?: number; readonly maxCostUsd?: number };
  /** Definition files named by `agents` (directories expanded to their `*.md` files). */
  readonly agentFiles: readonly string[];
  readonly toolModules: readonly ToolModuleRef[];
  readonly runs: readonly PlanRun[];
  /** Absolute path of the tasks file (`tasks`) whose lines the runs' `row`s are. */
  readonly tasks?: string;
  /** Scorers applied to every run as it finishes (`scorers`), in declaration order. */
  readonly scorers: readonly ScorerSpec[];
  /** Permissions of every agent (`permissions`), besides each definition's. */
  readonly permissions?: RunPermissions;
  /** How calls wait for decisions (`approvals`). */
  readonly approvals?: RunApprovals;
}
