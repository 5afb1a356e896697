/**
 * `troupe replay`: the run a replay makes of a recorded run directory or journal. Its `plan.json`
 * is the recorded plan (same entries, ids, expected values and scorers, so `troupe compare` and
 * `troupe score` treat it as any run) plus `replay`: what each entry replays. Each entry runs again
 * on the current (or the `--agent`) version of its definition, its tool calls answered from its
 * recorded journal (src/replay/replay-calls.ts). `troupe resume` continues a replay from this file
 * alone.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { DEFAULT_RUN_MAX_TOTAL_TOKENS } from '../constants.ts';
import { discoverAgents, pickAgent } from '../definition/discovery.ts';
import type { AgentDefinition } from '../definition/types.ts';
import { describeValue, UserError } from '../errors.ts';
import { readJournal } from '../journal/reader.ts';
import { startedOf } from '../replay/recording.ts';
import type { ReplaySource } from '../supervisor/replay.ts';
import { siblingJournals } from '../supervisor/replay.ts';
import { findAgentDefinition, loadAgentDefinitions } from './agent-files.ts';
import { RUN_DIR_FORMAT } from './constants.ts';
import { chooseProvider, type ProviderChoice } from './provider-choice.ts';
import type { ResultLine } from './results.ts';
import { journalFile, type RunDirPaths, readRunDir } from './run-dir.ts';
import { agentIdFor, newRunId, type PlannedRun, type RunPlan, type RunReplay } from './run-plan.ts';

/** What `troupe replay` asks for. */
export interface ReplayRequest {
  /** A run directory (with `plan.json`) or an agent's journal file. */
  readonly source: string;
  /** `--agent`: a definition file, or the name of an agent discovered from `cwd`. */
  readonly agent?: string;
  /** `--model`. @default the recorded run's */
  readonly model?: string;
  /** Where a journal's replay runs when the journal does not say (`troupe run` records its cwd). */
  readonly cwd: string;
  readonly threads?: number;
  readonly concurrency?: number;
  /** @default process.env (a journal's replay picks its provider as `troupe run` does) */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Bytes the first line of a journal to replay may hold (its `Started` event, the only line the
   * plan reads): a longer one fails with UserError `journal_line_too_long`.
   * @default MAX_JOURNAL_LINE_BYTES (64 MiB)
   */
  readonly maxLineBytes?: number;
}

/** A plan entry of the recorded run directory that left no journal there. */
export interface UnrecordedEntry {
  readonly index: number;
  /** The entry's plan `id`, when it has one. */
  readonly label?: string;
  /** Where its journal was expected: its last attempt's, or its first attempt's when it never ran. */
  readonly journal: string;
}

/** The replay's plan and the definitions it runs with (the plan's files, `--agent` last). */
export interface ReplayPlan {
  readonly plan: RunPlan;
  readonly definitions: AgentDefinition[];
  /**
   * Entries whose recorded journal is missing (never run, or the file is gone): they replay with
   * nothing recorded, so their read-only calls run live and the others are refused. Empty for a
   * journal's replay.
   */
  readonly unrecorded: readonly UnrecordedEntry[];
}

/**
 * Plans the replay of a recorded run directory or journal. Throws UserError `not_a_replay_source`
 * (neither a run directory nor a journal), `replay_no_journals` (a run directory none of whose
 * entries left a journal here, e.g. a redis-backend run), `replay_agent_ambiguous`, and the
 * definition loader's and journal reader's errors (`journal_line_too_long`: a journal's first line
 * over `maxLineBytes`).
 */
export async function planReplay(request: ReplayRequest): Promise<ReplayPlan> {
  const source = resolve(request.source);
  const isDir = statSync(source, { throwIfNoEntry: false })?.isDirectory() === true;
  const recorded = isDir ? fromRunDir(source) : fromJournal(source, request);
  const agentFile =
    request.agent !== undefined && looksLikeFile(request.agent) ? resolve(request.agent) : undefined;
  const agentFiles = [...recorded.agentFiles, ...(agentFile ? [agentFile] : [])];
  const definitions = await loadAgentDefinitions(agentFiles);
  let runs = recorded.runs;
  if (request.agent !== undefined) {
    const name = agentFile
      ? (definitions.at(-1)?.name ?? '')
      : ((await findAgentDefinition(recorded.cwd, definitions, request.agent))?.name ?? request.agent);
    if (!agentFile && !(await findAgentDefinition(recorded.cwd, definitions, name))) {
      // As `troupe run NAME` says it: the names there are (the run's own agent files' first), and
      // a close one.
      const found = await discoverAgents({ cwd: recorded.cwd });
      const own = definitions.map((definition) => ({ definition, shadows: [], warnings: [] }));
      pickAgent({ ...found, agents: [...own, ...found.agents] }, name);
    }
    runs = replaceAgent(runs, name);
  }
  const { runId, idPrefix } = newRunId();
  const plan: RunPlan = {
    ...recorded,
    format: RUN_DIR_FORMAT,
    runId,
    idPrefix,
    createdAt: new Date().toISOString(),
    ...(request.model === undefined ? {} : { model: request.model }),
    ...(request.threads === undefined ? {} : { threads: request.threads }),
    ...(request.concurrency === undefined ? {} : { concurrency: request.concurrency }),
    agentFiles,
    runs: runs.map((run) => ({ ...run, agentId: agentIdFor(idPrefix, run.index) })),
    replay: {
      of: source,
      journals: recorded.journals,
      ...(request.agent === undefined ? {} : { agent: agentFile ?? request.agent }),
    },
  };
  // A redis run keeps its journals in Redis; the replay runs here, on threads.
  const { backend: _backend, ...onThreads } = plan;
  return { plan: onThreads, definitions, unrecorded: recorded.unrecorded };
}

/** What a plan entry of a replay run replays (`SpawnOptions.replay`). */
export function replaySourceOf(replay: RunReplay, index: number): ReplaySource {
  const journal = replay.journals[index] ?? null;
  return {
    journal,
    of: replay.of,
    ...(journal === null ? {} : { journals: siblingJournals(journal) }),
  };
}

type Recorded = Omit<RunPlan, 'format' | 'runId' | 'idPrefix' | 'createdAt' | 'runs' | 'replay'> & {
  readonly runs: readonly PlannedRun[];
  readonly journals: readonly (string | null)[];
  readonly unrecorded: readonly UnrecordedEntry[];
};

function fromRunDir(root: string): Recorded {
  const { plan, results, paths } = readRunDir(root);
  const files = existsSync(paths.journals) ? new Set(readdirSync(paths.journals)) : new Set<string>();
  const { journals, unrecorded } = recordedJournals(plan, paths, results, files);
  if (journals.every((journal) => journal === null)) {
    throw new UserError(
      'replay_no_journals',
      `Expected journals to replay in ${paths.journals}, found none (a run on the redis backend keeps them in Redis)`,
      { runDir: root },
    );
  }
  const { format: _f, runId: _r, idPrefix: _i, createdAt: _c, replay: _p, taskRows, ...rest } = plan;
  return {
    ...rest,
    // The replay's run directory gets its own copy of the recorded run's rows.
    ...(taskRows === undefined
      ? {}
      : { taskRows: { ...taskRows, file: resolve(paths.root, taskRows.file) } }),
    journals,
    unrecorded,
  };
}

/**
 * The journal each plan entry of the recorded run replays (null when it left none), and the
 * entries that left none. `results` is read once: a scan of every line for each entry made
 * planning the replay of a 20,000-entry run quadratic in the data set. `files` are the names in
 * the run's journals directory.
 */
export function recordedJournals(
  plan: Pick<RunPlan, 'runs' | 'idPrefix'>,
  paths: RunDirPaths,
  results: Iterable<Pick<ResultLine, 'index' | 'agentId'>>,
  files: ReadonlySet<string>,
): { journals: (string | null)[]; unrecorded: UnrecordedEntry[] } {
  const lastIds = new Map<number, string>();
  for (const line of results) if (line.index !== null) lastIds.set(line.index, line.agentId);
  const journals = plan.runs.map((run) => {
    const agentId = recordedAgentId(plan.idPrefix, lastIds.get(run.index), run.index, files);
    return agentId === undefined ? null : journalFile(paths, agentId);
  });
  // Replayed all the same (a run cut short leaves some), but never silently: see UnrecordedEntry.
  const unrecorded = plan.runs.flatMap((run, position): UnrecordedEntry[] => {
    if (journals[position] !== null) return [];
    return [
      {
        index: run.index,
        ...(run.label === undefined ? {} : { label: run.label }),
        journal: journalFile(paths, lastIds.get(run.index) ?? agentIdFor(plan.idPrefix, run.index)),
      },
    ];
  });
  return { journals, unrecorded };
}

/**
 * The agent whose journal stands for plan entry `index`: its last attempt with a result line
 * (`lastId`), else its latest attempt that left a journal.
 */
function recordedAgentId(
  idPrefix: string,
  lastId: string | undefined,
  index: number,
  files: ReadonlySet<string>,
): string | undefined {
  if (lastId !== undefined && files.has(`${lastId}.jsonl`)) return lastId;
  for (let attempt = 32; attempt >= 1; attempt -= 1) {
    const id = agentIdFor(idPrefix, index, attempt);
    if (files.has(`${id}.jsonl`)) return id;
  }
  return undefined;
}

function fromJournal(path: string, request: ReplayRequest): Recorded {
  if (statSync(path, { throwIfNoEntry: false }) === undefined) {
    throw new UserError(
      'not_a_replay_source',
      `Expected a run directory or a journal file to replay, found nothing at ${path}`,
      { path },
    );
  }
  // Its Started event only: the recording itself is read, bounded, when the agent is replayed.
  const bound = request.maxLineBytes === undefined ? {} : { maxLineBytes: request.maxLineBytes };
  const started = startedOf(readJournal(path, { lines: 1, ...bound }).events);
  // Where `troupe run` ran it, as `troupe resume` does.
  const cwd = typeof started.metadata.cwd === 'string' ? started.metadata.cwd : request.cwd;
  const provider: ProviderChoice = chooseProvider({ ...(request.env ? { env: request.env } : {}) });
  const model = provider.name === started.provider ? started.model : undefined;
  return {
    name: `replay of ${basename(path)}`,
    planFile: null,
    cwd,
    provider,
    ...(model === undefined ? {} : { model }),
    threads: 1,
    isolation: 'shared',
    concurrency: 1,
    ...(started.limits === undefined ? {} : { limits: started.limits }),
    runLimits: { maxTotalTokens: DEFAULT_RUN_MAX_TOTAL_TOKENS, maxCostUsd: 0 },
    agentFiles: [],
    toolModules: [],
    runs: [
      {
        index: 0,
        agent: started.definition.name,
        task: started.task,
        context: started.context,
        metadata: started.metadata,
        source: { file: path, line: 1, column: 1 },
        agentId: started.agentId,
      },
    ],
    journals: [path],
    unrecorded: [],
  };
}

/**
 * Runs on `name` instead: the entries of the agent of that name, or every entry when the recorded
 * run has one agent only.
 */
function replaceAgent(runs: readonly PlannedRun[], name: string): PlannedRun[] {
  const names = new Set(runs.map((run) => run.agent));
  if (names.has(name)) return [...runs];
  if (names.size === 1) return runs.map((run) => ({ ...run, agent: name }));
  throw new UserError(
    'replay_agent_ambiguous',
    `Expected --agent to name one of the recorded agents (${[...names].sort().join(', ')}) or a file defining one, got ${describeValue(name)}; with several agents in a run, --agent replaces the one of the same name`,
    { agent: name, recorded: [...names].sort() },
  );
}

function looksLikeFile(value: string): boolean {
  return value.endsWith('.md') || value.includes('/') || existsSync(resolve(value));
}
