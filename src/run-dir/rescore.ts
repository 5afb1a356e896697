/**
 * `troupe score RUN_DIR [--plan FILE]`: scores a finished (or partly finished) run again, after
 * the fact. The scorers are the run's own (`plan.json`), or those of another plan file, whose
 * items' `expected` values then replace the run's: an item of that plan is matched to the run's
 * entry with the same `id`, else the same position. The latest result line of every plan entry
 * gets fresh scores; `results.jsonl`, `plan.json` (when the scorers changed) and `summary.json` are
 * rewritten, each atomically. Judges run on a Supervisor built from the run's provider, and their
 * journals go to the run's `journals/` with a `-s<n>` suffix (n = the sessions before this one)
 * so no earlier judge's journal is continued.
 */
import type { AgentDefinition } from '../definition/types.ts';
import { UserError } from '../errors.ts';
import type { ScoringSummary } from '../eval/types.ts';
import type { SupervisorOptions } from '../supervisor/options.ts';
import { Supervisor } from '../supervisor/supervisor.ts';
import { loadAgentDefinitions } from './agent-files.ts';
import { loadPlan } from './plan.ts';
import { checkProvider } from './provider-choice.ts';
import { latestByIndex, type ResultLine } from './results.ts';
import { RunDirWriter, readRunDir } from './run-dir.ts';
import type { PlannedRun, RunPlan } from './run-plan.ts';
import { createRunScoring, judgeSessionNumber, scoreInputOf } from './run-scoring.ts';
import { type RunSummary, recordedSessions, summarize } from './summary.ts';
import { inputsOf, planInputsOf } from './task-rows.ts';
import { unendedAttempts } from './timeline.ts';

/** Options of {@link rescoreRunDir}. */
export interface RescoreOptions {
  /** A plan file whose `scorers` (and items' `expected` values) replace the run's. */
  readonly planFile?: string;
  /** Working directory for resolving the plan file's agents. @default process.cwd() */
  readonly cwd?: string;
  /** Aborting it cancels running judges. */
  readonly signal?: AbortSignal;
  /** Supervisor options for the judges beyond the run's (tests). */
  readonly supervisor?: Partial<SupervisorOptions>;
}

/** What a re-scoring produced. */
export interface RescoreResult {
  readonly summary: RunSummary;
  readonly scoring: ScoringSummary;
  /** Plan entries that had a result to score. */
  readonly scored: number;
}

/**
 * Scores the run in `dir` again. Throws UserError `not_a_run_dir`, `invalid_plan` (a bad
 * `--plan`), `no_scorers` (neither the run nor the plan declares any), and the provider's errors
 * when a judge needs it.
 */
export async function rescoreRunDir(dir: string, options: RescoreOptions = {}): Promise<RescoreResult> {
  const startedAt = new Date();
  const contents = readRunDir(dir);
  let plan = contents.plan;
  const definitions = await loadAgentDefinitions(plan.agentFiles);
  if (options.planFile !== undefined) {
    const loaded = await loadPlan(options.planFile, { cwd: options.cwd ?? process.cwd() });
    const items = loaded.plan.runs.map((run) => ({
      ...(run.label === undefined ? {} : { label: run.label }),
      expected: planInputsOf(loaded.plan, run).expected,
    }));
    plan = withScorersOf(plan, items, loaded.plan.scorers, loaded.plan.file);
    definitions.push(...loaded.definitions);
  }
  if (plan.scorers === undefined || plan.scorers.length === 0)
    throw new UserError(
      'no_scorers',
      `Expected scorers to score ${contents.paths.root} with: its plan declares none${options.planFile === undefined ? '; give a plan with `scorers` (--plan FILE)' : ` and neither does ${options.planFile}`}`,
      { runDir: contents.paths.root },
    );
  const previous = recordedSessions(contents.summary, contents.events);
  // Read before any judge runs or anything is rewritten: a journal that cannot be read fails here.
  const unended = unendedAttempts(contents);
  let supervisor: Supervisor | undefined;
  const scoring = await createRunScoring(plan, {
    definitions,
    spawner: {
      spawn: (agent, spawnOptions) => {
        supervisor ??= judgeSupervisor(plan, contents.paths.journals, definitions, options.supervisor);
        return supervisor.spawn(agent, spawnOptions);
      },
    },
    // One suffix per session of the run (fanout, resume or score): no judge id is reused.
    judgeIdSuffix: `-s${judgeSessionNumber(contents.paths.journals, plan.scorers, previous.length)}`,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  if (scoring === undefined) throw new Error('unreachable: scorers were checked above');
  if (scoring.hasJudges) await checkProvider(plan.provider);
  const latest = latestByIndex(contents.results);
  const rescored = new Map<ResultLine, ResultLine>();
  // At most `concurrency` entries are scored at once, each row read when its turn comes: scored
  // all at once, every row of the data set was read into memory before the first score was in.
  const { runs } = plan;
  let next = 0;
  let failed = false;
  const scoreNext = async (): Promise<void> => {
    for (let position = next++; position < runs.length && !failed; position = next++) {
      const run = runs[position];
      const line = run === undefined ? undefined : latest.get(run.index);
      if (run === undefined || line === undefined) continue;
      try {
        const inputs = inputsOf(plan, contents.paths.root, run);
        rescored.set(line, { ...line, scores: await scoring.score(scoreInputOf(run, inputs, line)) });
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  try {
    const workers = Math.max(1, Math.min(plan.concurrency, runs.length));
    await Promise.all(Array.from({ length: workers }, scoreNext));
  } finally {
    await supervisor?.close();
  }
  const lines = contents.results.map((line) => rescored.get(line) ?? line);
  const writer = RunDirWriter.reopen(contents.paths.root);
  if (plan !== contents.plan) writer.rewritePlan(plan);
  writer.rewriteResults(lines);
  // Counted as the reports count them: an entry whose current attempt started and has no line
  // (a killed `resume --retry-failed`) is interrupted, not the failure before it, nor complete.
  const summary = summarize(
    plan,
    lines,
    [
      ...previous,
      {
        kind: 'score',
        startedAt: startedAt.toISOString(),
        endedAt: new Date().toISOString(),
        interrupted: options.signal?.aborted ?? false,
      },
    ],
    new Date(),
    contents.summary?.budgetSpent,
    unended,
  );
  writer.writeSummary(summary);
  if (summary.scoring === undefined)
    throw new Error('unreachable: a plan with scorers has a scoring summary');
  return { summary, scoring: summary.scoring, scored: rescored.size };
}

/** An item of the plan whose expected values replace a run's. */
export interface ExpectedItem {
  readonly label?: string;
  readonly expected?: unknown;
}

/**
 * The run's plan with `scorers` and the `expected` values of `items` (matched by `id`, else by
 * position: an entry with an `id` takes the item with the same `id`, the n-th repeat of an `id`
 * the n-th item with that `id` as `troupe compare` matches them, and otherwise the item at its
 * position when that item has no `id`). Entries with no matching item lose their `expected`. A
 * plan over a tasks file records `from` (the plan file) in `taskRows.expectedFrom`: the entries'
 * own `expected` then replace their rows'.
 */
export function withScorersOf(
  plan: RunPlan,
  items: readonly ExpectedItem[],
  scorers: RunPlan['scorers'],
  from: string,
): RunPlan {
  const byId = new Map<string, ExpectedItem[]>();
  for (const item of items) {
    if (item.label === undefined) continue;
    const same = byId.get(item.label);
    if (same === undefined) byId.set(item.label, [item]);
    else same.push(item);
  }
  const seen = new Map<string, number>();
  // plan.runs are in plan order, so the n-th run with an id meets the n-th item with it.
  const runs = plan.runs.map((run): PlannedRun => {
    const atPosition = items[run.index];
    let byLabel: ExpectedItem | undefined;
    if (run.label !== undefined) {
      const occurrence = seen.get(run.label) ?? 0;
      seen.set(run.label, occurrence + 1);
      byLabel = byId.get(run.label)?.[occurrence];
    }
    const match = byLabel ?? (atPosition?.label === undefined ? atPosition : undefined);
    const { expected: _dropped, ...rest } = run;
    return match?.expected === undefined ? rest : { ...rest, expected: match.expected };
  });
  return {
    ...plan,
    runs,
    ...(plan.taskRows === undefined ? {} : { taskRows: { ...plan.taskRows, expectedFrom: from } }),
    ...(scorers === undefined || scorers.length === 0 ? {} : { scorers }),
  };
}

function judgeSupervisor(
  plan: RunPlan,
  journalDir: string,
  definitions: readonly AgentDefinition[],
  extra: Partial<SupervisorOptions> | undefined,
): Supervisor {
  return new Supervisor({
    threads: plan.threads,
    isolation: plan.isolation,
    providers: { [plan.provider.name]: plan.provider.config },
    defaultProvider: plan.provider.name,
    ...(plan.defaultModel === undefined ? {} : { defaultModel: plan.defaultModel }),
    journalDir,
    cwd: plan.cwd,
    definitions,
    toolModules: plan.toolModules,
    ...extra,
  });
}
