/**
 * Plan files for `troupe fanout`: YAML listing agent runs (`runs:`), or one agent over a JSONL data
 * set (`agent:` + `tasks:`), plus defaults. Every problem (syntax, types, unknown keys, unknown
 * agents, bad tasks lines) is collected and reported at once, before anything runs.
 */
import { closeSync, existsSync, openSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { suggestion } from '../definition/fields.ts';
import { loadDefinitionFile } from '../definition/load.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { checkScorerSpecs } from '../eval/spec.ts';
import type { ScorerSpec } from '../eval/types.ts';
import type { AgentLimits } from '../loop/types.ts';
import { type McpServers, readMcpServerMap } from '../mcp/config.ts';
import type { ToolModuleRef } from '../protocol/messages.ts';
import { PROVIDER_NAMES } from '../providers/factory.ts';
import { type ModelSettings, readModelSettings } from '../providers/model-settings.ts';
import type { ModelMap } from '../providers/models.ts';
import { availableAgentNames, expandAgentPaths } from './agent-files.ts';
import { LIMIT_KEYS, MAX_TASK_LINE_BYTES, PLAN_KEYS, RUN_KEYS, RUN_LIMIT_KEYS } from './constants.ts';
import { readRunApprovals, readRunPermissions } from './plan-permissions.ts';
import { expected, type FilePosition, type PlanProblems } from './plan-problems.ts';
import { parseTasksJsonl } from './plan-tasks.ts';
import type { Plan, PlanRun, ProviderModuleRef } from './plan-types.ts';
import { contextOf, fileLines } from './task-rows.ts';
import { fieldName, readYamlFile, type Segment, type YamlSource } from './yaml-source.ts';

/** A validated plan and the definitions its `agents` key loaded. */
export interface LoadedPlan {
  readonly plan: Plan;
  readonly definitions: readonly AgentDefinition[];
}

/** Options of {@link loadPlan}. */
export interface LoadPlanOptions {
  /** Agents' working directory when the plan sets no `cwd`. @default process.cwd() */
  readonly cwd?: string;
  /**
   * Bytes one line of the plan's tasks file may hold (`--max-task-line-bytes`); a longer line is
   * a problem of the plan. @default MAX_TASK_LINE_BYTES (16 MiB)
   */
  readonly maxTaskLineBytes?: number;
}

type Mapping = Record<string, unknown>;

/**
 * Reads and validates the plan at `file`. Throws UserError `plan_not_found` when it cannot be read
 * and `invalid_plan` (every problem in `fields.problems`, see {@link PlanProblems}) when it is wrong.
 */
export async function loadPlan(file: string, options: LoadPlanOptions = {}): Promise<LoadedPlan> {
  const { path, source, problems } = readYamlFile(file, 'a plan file');
  const checker = new PlanChecker(
    path,
    source,
    problems,
    resolve(options.cwd ?? process.cwd()),
    options.maxTaskLineBytes ?? MAX_TASK_LINE_BYTES,
  );
  const draft = checker.check(source.value());
  const definitions = await checker.checkAgents(draft);
  problems.throwIfAny(path);
  return { plan: draft.plan, definitions };
}

/** An agent name as written in the plan, to check against the available agents. */
interface AgentRef {
  readonly name: string;
  readonly position: FilePosition;
  readonly field: string;
}

interface Draft {
  readonly plan: Plan;
  /** Every agent name the plan uses, where it is written (a run's own `agent`, or the plan's). */
  readonly agentRefs: readonly AgentRef[];
}

class PlanChecker {
  readonly #file: string;
  readonly #dir: string;
  readonly #source: YamlSource;
  readonly #problems: PlanProblems;
  readonly #cwd: string;
  readonly #maxLineBytes: number;

  constructor(file: string, source: YamlSource, problems: PlanProblems, cwd: string, maxLineBytes: number) {
    this.#file = file;
    this.#dir = dirname(file);
    this.#source = source;
    this.#problems = problems;
    this.#cwd = cwd;
    this.#maxLineBytes = maxLineBytes;
  }

  #fail(path: readonly Segment[], message: string): void {
    this.#problems.add(this.#file, this.#source.valueAt(path), fieldName(path), message);
  }

  check(value: unknown): Draft {
    if (!isRecord(value)) {
      this.#fail([], expected('a mapping with `runs` (or `agent` and `tasks`)', value));
      return { plan: emptyPlan(this.#file, this.#cwd), agentRefs: [] };
    }
    for (const key of Object.keys(value)) {
      if (!(PLAN_KEYS as readonly string[]).includes(key)) {
        this.#problems.add(
          this.#file,
          this.#source.keyAt([], key),
          key,
          `${expected(`one of the plan keys (${PLAN_KEYS.join(', ')})`, key)}${suggestion(key, PLAN_KEYS)}`,
        );
      }
    }
    const name = this.#optionalString(value, ['name']);
    const agent = this.#optionalString(value, ['agent']);
    const cwd = this.#directory(value);
    const provider = this.#provider(value.provider);
    const providerOptions = this.#optionalRecord(value, ['providerOptions']);
    const model = this.#optionalString(value, ['model']);
    const modelMap = this.#modelMap(value);
    const modelSettings = this.#modelSettings(value.modelSettings, []);
    const mcpServers = this.#mcpServers(value);
    const threads = this.#positiveInt(value, ['threads']);
    const concurrency = this.#positiveInt(value, ['concurrency']);
    const isolation = value.isolation;
    if (isolation !== undefined && isolation !== 'shared' && isolation !== 'thread')
      this.#fail(['isolation'], expected('`shared` or `thread`', isolation));
    const limits = this.#limits(value.limits, 'limits', LIMIT_KEYS);
    const runLimits = this.#limits(value.runLimits, 'runLimits', RUN_LIMIT_KEYS);
    const agentFiles = this.#paths(value.agents, ['agents']);
    const toolModules = this.#toolModules(value.toolModules);
    const { runs, agentRefs, tasks } = this.#runs(value, agent);
    const { scorers, judgeRefs } = this.#scorers(value.scorers);
    const fail = (at: readonly Segment[], message: string, where?: 'key'): void => {
      const key = at.at(-1);
      if (where === 'key' && typeof key === 'string') {
        this.#problems.add(this.#file, this.#source.keyAt(at.slice(0, -1), key), fieldName(at), message);
      } else this.#fail(at, message);
    };
    const permissions = readRunPermissions(value.permissions, ['permissions'], fail);
    const approvals = readRunApprovals(value.approvals, ['approvals'], fail);
    const plan: Plan = {
      file: this.#file,
      ...(name === undefined ? {} : { name }),
      cwd,
      ...(provider === undefined ? {} : { provider }),
      ...(providerOptions === undefined ? {} : { providerOptions }),
      ...(model === undefined ? {} : { model }),
      ...(modelMap === undefined ? {} : { modelMap }),
      ...(modelSettings === undefined ? {} : { modelSettings }),
      ...(mcpServers === undefined ? {} : { mcpServers }),
      ...(threads === undefined ? {} : { threads }),
      ...(isolation === 'shared' || isolation === 'thread' ? { isolation } : {}),
      ...(concurrency === undefined ? {} : { concurrency }),
      ...(limits === undefined ? {} : { limits }),
      ...(runLimits === undefined ? {} : { runLimits }),
      agentFiles,
      toolModules,
      runs,
      ...(tasks === undefined ? {} : { tasks }),
      scorers,
      ...(permissions === undefined ? {} : { permissions }),
      ...(approvals === undefined ? {} : { approvals }),
    };
    return { plan, agentRefs: [...agentRefs, ...judgeRefs] };
  }

  /** Loads the `agents` files and checks that every run names an agent that exists. */
  async checkAgents(draft: Draft): Promise<AgentDefinition[]> {
    const definitions: AgentDefinition[] = [];
    for (const file of draft.plan.agentFiles) {
      const result = await loadDefinitionFile(file, { source: 'project', mode: 'strict' });
      if (result.definition) definitions.push(result.definition);
      for (const problem of result.errors) {
        this.#problems.add(
          problem.file,
          problem,
          problem.path === '' ? '(definition)' : problem.path,
          `${problem.code}: ${problem.message}`,
        );
      }
    }
    const known = await availableAgentNames(draft.plan.cwd, definitions);
    const reported = new Set<string>();
    for (const ref of draft.agentRefs) {
      const key = `${ref.position.line}:${ref.position.column}`;
      if (known.has(ref.name) || reported.has(key)) continue;
      reported.add(key);
      const names = [...known].sort().join(', ');
      this.#problems.add(
        this.#file,
        ref.position,
        ref.field,
        expected(`the name of an available agent (${names})`, ref.name),
      );
    }
    return definitions;
  }

  #runs(
    value: Mapping,
    agent: string | undefined,
  ): Pick<Draft, 'agentRefs'> & { runs: PlanRun[]; tasks?: string } {
    const { runs, tasks } = value;
    const planAgent: AgentRef[] =
      agent === undefined ? [] : [{ name: agent, position: this.#source.valueAt(['agent']), field: 'agent' }];
    if (runs !== undefined && tasks !== undefined) {
      this.#fail(['tasks'], 'expected either `runs` or `tasks`, got both');
      return { runs: [], agentRefs: planAgent };
    }
    if (tasks !== undefined) return { ...this.#tasks(tasks, agent), agentRefs: planAgent };
    if (!Array.isArray(runs) || runs.length === 0) {
      this.#fail(['runs'], expected('a non-empty list of runs (or `agent` and `tasks`)', runs));
      return { runs: [], agentRefs: planAgent };
    }
    const planned: PlanRun[] = [];
    const agentRefs: AgentRef[] = [];
    let inherits = false;
    runs.forEach((entry: unknown, index) => {
      const path: Segment[] = ['runs', index];
      if (!isRecord(entry)) {
        this.#fail(path, expected('a mapping with `agent` and `task`', entry));
        return;
      }
      for (const key of Object.keys(entry)) {
        if (!(RUN_KEYS as readonly string[]).includes(key)) {
          this.#problems.add(
            this.#file,
            this.#source.keyAt(path, key),
            fieldName([...path, key]),
            `${expected(`one of ${RUN_KEYS.join(', ')}`, key)}${suggestion(key, RUN_KEYS)}`,
          );
        }
      }
      const own = this.#optionalString(entry, ['agent'], path);
      const runAgent = own ?? agent;
      if (own !== undefined) {
        const agentPath = [...path, 'agent'];
        agentRefs.push({ name: own, position: this.#source.valueAt(agentPath), field: fieldName(agentPath) });
      } else inherits = true;
      if (runAgent === undefined) {
        if (entry.agent === undefined)
          this.#fail([...path, 'agent'], expected('an agent name (here or as the plan `agent`)', undefined));
      }
      const task = entry.task;
      if (typeof task !== 'string' || task.trim() === '')
        this.#fail([...path, 'task'], expected('a non-empty string', task));
      const context = contextOf(entry.context);
      if (context === undefined)
        this.#fail([...path, 'context'], expected('a string or a list of strings', entry.context));
      const metadata = this.#optionalRecord(entry, ['metadata'], path);
      const modelSettings = this.#modelSettings(entry.modelSettings, path);
      const id = entry.id;
      const expectedValue = entry.expected;
      if (id !== undefined && typeof id !== 'string' && typeof id !== 'number')
        this.#fail([...path, 'id'], expected('a string or a number', id));
      if (runAgent === undefined || typeof task !== 'string' || context === undefined) return;
      const position = this.#source.valueAt(path);
      planned.push({
        index: planned.length,
        agent: runAgent,
        task,
        context,
        metadata: metadata ?? {},
        ...(typeof id === 'string' || typeof id === 'number' ? { label: String(id) } : {}),
        ...(expectedValue === undefined ? {} : { expected: expectedValue }),
        ...(modelSettings === undefined ? {} : { modelSettings }),
        source: { file: this.#file, ...position },
      });
    });
    return { runs: planned, agentRefs: inherits ? [...planAgent, ...agentRefs] : agentRefs };
  }

  /** `scorers`: every problem at its own position; judges' agent names to check like run agents. */
  #scorers(value: unknown): { scorers: ScorerSpec[]; judgeRefs: AgentRef[] } {
    if (value === undefined) return { scorers: [], judgeRefs: [] };
    const { scorers, judgeAgents } = checkScorerSpecs(
      value,
      (path, message, at) => {
        const full: Segment[] = ['scorers', ...path];
        const last = full.at(-1);
        const position =
          at === 'key' && typeof last === 'string'
            ? this.#source.keyAt(full.slice(0, -1), last)
            : this.#source.valueAt(full);
        this.#problems.add(this.#file, position, fieldName(full), message);
      },
      this.#dir,
    );
    const judgeRefs = judgeAgents.map((ref) => {
      const path: Segment[] = ['scorers', ...ref.path];
      return { name: ref.name, position: this.#source.valueAt(path), field: fieldName(path) };
    });
    return { scorers, judgeRefs };
  }

  #tasks(tasks: unknown, agent: string | undefined): { runs: PlanRun[]; tasks?: string } {
    if (agent === undefined) this.#fail(['agent'], expected('an agent name to run over `tasks`', undefined));
    if (typeof tasks !== 'string' || tasks.trim() === '') {
      this.#fail(['tasks'], expected('the path of a JSONL tasks file', tasks));
      return { runs: [] };
    }
    const file = resolve(this.#dir, tasks);
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch {
      this.#fail(['tasks'], expected(`a readable JSONL file (${file})`, tasks));
      return { runs: [] };
    }
    const before = this.#problems.count;
    let lines: ReturnType<typeof parseTasksJsonl>;
    try {
      lines = parseTasksJsonl(fileLines(fd, this.#maxLineBytes), file, this.#problems, this.#maxLineBytes);
    } catch {
      // A directory opens, then fails to read.
      this.#fail(['tasks'], expected(`a readable JSONL file (${file})`, tasks));
      return { runs: [] };
    } finally {
      closeSync(fd);
    }
    if (lines.length === 0 && this.#problems.count === before)
      this.#fail(['tasks'], expected('a tasks file with at least one task', tasks));
    const runs = agent === undefined ? [] : lines.map((line, index) => ({ ...line, index, agent }));
    return { runs, tasks: file };
  }

  #provider(value: unknown): string | ProviderModuleRef | undefined {
    if (value === undefined) return undefined;
    if (typeof value === 'string') {
      if ((PROVIDER_NAMES as readonly string[]).includes(value)) return value;
      this.#fail(['provider'], expected(`one of ${PROVIDER_NAMES.join(', ')} or { module, export }`, value));
      return undefined;
    }
    if (isRecord(value) && typeof value.module === 'string') {
      const module = resolve(this.#dir, value.module);
      if (!existsSync(module))
        this.#fail(['provider', 'module'], expected('an existing module file', value.module));
      if (value.export !== undefined && typeof value.export !== 'string')
        this.#fail(['provider', 'export'], expected('an export name', value.export));
      return { module, ...(typeof value.export === 'string' ? { export: value.export } : {}) };
    }
    this.#fail(['provider'], expected(`one of ${PROVIDER_NAMES.join(', ')} or { module, export }`, value));
    return undefined;
  }

  #directory(value: Mapping): string {
    const cwd = value.cwd;
    if (cwd === undefined) return this.#cwd;
    if (typeof cwd !== 'string' || cwd.trim() === '') {
      this.#fail(['cwd'], expected('a directory path', cwd));
      return this.#cwd;
    }
    const absolute = resolve(this.#dir, cwd);
    if (!isDirectory(absolute)) this.#fail(['cwd'], expected(`an existing directory (${absolute})`, cwd));
    return absolute;
  }

  #paths(value: unknown, path: readonly Segment[]): string[] {
    if (value === undefined) return [];
    const list = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(list) || !list.every((item) => typeof item === 'string')) {
      this.#fail(path, expected('a path or a list of paths', value));
      return [];
    }
    const absolute = list.map((item: string) => resolve(this.#dir, item));
    absolute.forEach((item, index) => {
      if (!existsSync(item))
        this.#fail(
          typeof value === 'string' ? path : [...path, index],
          expected('an existing file or directory', list[index]),
        );
    });
    return expandAgentPaths(absolute.filter((item) => existsSync(item)));
  }

  #toolModules(value: unknown): ToolModuleRef[] {
    if (value === undefined) return [];
    if (!Array.isArray(value)) {
      this.#fail(['toolModules'], expected('a list of modules (paths or { module, export })', value));
      return [];
    }
    const refs: ToolModuleRef[] = [];
    value.forEach((entry: unknown, index) => {
      const path: Segment[] = ['toolModules', index];
      const ref = typeof entry === 'string' ? { module: entry } : isRecord(entry) ? entry : undefined;
      if (ref === undefined || typeof ref.module !== 'string') {
        this.#fail(path, expected('a module path or { module, export }', entry));
        return;
      }
      if (ref.export !== undefined && typeof ref.export !== 'string') {
        this.#fail([...path, 'export'], expected('an export name', ref.export));
        return;
      }
      const module = resolve(this.#dir, ref.module);
      if (!existsSync(module)) this.#fail(path, expected('an existing module file', ref.module));
      refs.push({ module, ...(typeof ref.export === 'string' ? { export: ref.export } : {}) });
    });
    return refs;
  }

  /**
   * `limits` or `runLimits`: numbers, integers except costs. `maxSteps` must be positive; the
   * budgets may be 0 (unlimited), `truncationRetries` 0 (no continuation re-ask).
   */
  #limits(value: unknown, name: string, keys: readonly string[]): AgentLimits | undefined {
    if (value === undefined) return undefined;
    if (!isRecord(value)) {
      this.#fail([name], expected(`a mapping of ${keys.join(', ')}`, value));
      return undefined;
    }
    const limits: Record<string, number> = {};
    for (const [key, limit] of Object.entries(value)) {
      if (!keys.includes(key)) {
        this.#problems.add(
          this.#file,
          this.#source.keyAt([name], key),
          `${name}.${key}`,
          `${expected(`one of ${keys.join(', ')}`, key)}${suggestion(key, keys)}`,
        );
        continue;
      }
      const integer = key !== 'maxCostUsd';
      const min = key === 'maxSteps' ? 1 : 0;
      if (typeof limit !== 'number' || !(limit >= min) || (integer && !Number.isInteger(limit))) {
        const unlimited = key !== 'maxSteps' && key !== 'truncationRetries' ? ' (0 = unlimited)' : '';
        const kind = `${min === 1 ? 'a positive' : 'a non-negative'} ${integer ? 'integer' : 'number'}${unlimited}`;
        this.#fail([name, key], expected(kind, limit));
        continue;
      }
      limits[key] = limit;
    }
    return limits;
  }

  #optionalString(value: Mapping, path: readonly Segment[], at: readonly Segment[] = []): string | undefined {
    const key = path[0];
    const item = typeof key === 'string' ? value[key] : undefined;
    if (item === undefined) return undefined;
    if (typeof item === 'string' && item.trim() !== '') return item;
    this.#fail([...at, ...path], expected('a non-empty string', item));
    return undefined;
  }

  #optionalRecord(
    value: Mapping,
    path: readonly Segment[],
    at: readonly Segment[] = [],
  ): Mapping | undefined {
    const key = path[0];
    const item = typeof key === 'string' ? value[key] : undefined;
    if (item === undefined) return undefined;
    if (isRecord(item)) return item;
    this.#fail([...at, ...path], expected('a mapping', item));
    return undefined;
  }

  /** `modelMap: { sonnet: claude-sonnet-4-5 }`: alias -> model id. */
  #modelMap(value: Mapping): ModelMap | undefined {
    const map = this.#optionalRecord(value, ['modelMap']);
    if (map === undefined) return undefined;
    const entries: [string, string][] = [];
    for (const [alias, id] of Object.entries(map)) {
      if (typeof id === 'string' && id.trim() !== '') entries.push([alias, id.trim()]);
      else this.#fail(['modelMap', alias], expected('a model id', id));
    }
    return Object.fromEntries(entries);
  }

  /**
   * `modelSettings` of the plan or of one run (at `at`): every problem, unknown keys included (a
   * plan has no forward-compatible keys), at its own position.
   */
  #modelSettings(value: unknown, at: readonly Segment[]): ModelSettings | undefined {
    if (value === undefined) return undefined;
    const { settings, problems } = readModelSettings(value);
    for (const problem of problems) {
      const path: Segment[] = [...at, 'modelSettings', ...problem.path];
      const last = path.at(-1);
      const position =
        problem.kind === 'unknown' && typeof last === 'string'
          ? this.#source.keyAt(path.slice(0, -1), last)
          : this.#source.valueAt(path);
      this.#problems.add(this.#file, position, fieldName(path), problem.message);
    }
    return problems.length > 0 ? undefined : settings;
  }

  /** `mcpServers: { name: { command, args } | { type: http, url } }`, as in `.mcp.json`. */
  #mcpServers(value: Mapping): McpServers | undefined {
    if (value.mcpServers === undefined) return undefined;
    const read = readMcpServerMap(value.mcpServers);
    for (const problem of read.problems) this.#fail(['mcpServers', ...problem.path], problem.message);
    return read.servers;
  }

  #positiveInt(value: Mapping, path: readonly Segment[]): number | undefined {
    const key = path[0];
    const item = typeof key === 'string' ? value[key] : undefined;
    if (item === undefined) return undefined;
    if (typeof item === 'number' && Number.isInteger(item) && item >= 1) return item;
    this.#fail(path, expected('a positive integer', item));
    return undefined;
  }
}

function isRecord(value: unknown): value is Mapping {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function emptyPlan(file: string, cwd: string): Plan {
  return { file, cwd, agentFiles: [], toolModules: [], runs: [], scorers: [] };
}
