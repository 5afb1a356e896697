/**
 * Scoring inside a run directory: the scorers of `plan.json` applied to result lines, the input a
 * scorer sees for a plan entry, and the scoring part of `summary.json`.
 */
import { existsSync, readdirSync } from 'node:fs';
import type { AgentDefinition } from '../definition/types.ts';
import type { JudgeSpawner } from '../eval/judge.ts';
import { loadScorerFunction } from '../eval/module-scorer.ts';
import { Scoring } from '../eval/scoring.ts';
import { summarizeScores } from '../eval/summary.ts';
import type { ScoreInput, ScoringSummary } from '../eval/types.ts';
import { findAgentDefinition } from './agent-files.ts';
import type { RunInputs } from './plan-types.ts';
import type { ResultLine } from './results.ts';
import type { PlannedRun, RunPlan } from './run-plan.ts';

/** What a scorer sees of plan entry `run` (given `inputs`, see `inputsOf`) whose result is `line`. */
export function scoreInputOf(run: PlannedRun, inputs: RunInputs, line: ResultLine): ScoreInput {
  const completed = line.status === 'completed';
  return {
    index: run.index,
    ...(run.label === undefined ? {} : { id: run.label }),
    task: inputs.task,
    context: inputs.context,
    ...(inputs.expected === undefined ? {} : { expected: inputs.expected }),
    status: line.status,
    output: completed ? (line.result !== undefined ? line.result : (line.answer ?? '')) : undefined,
    ...(line.answer === undefined ? {} : { answer: line.answer }),
    ...(completed ? {} : { failure: `${line.reason ?? 'failed'}: ${line.error?.message ?? ''}`.trim() }),
    agentId: line.agentId,
  };
}

/** Options of {@link createRunScoring}. */
export interface RunScoringOptions {
  /** Definitions besides the discovered ones (the plan's `agents`). */
  readonly definitions: readonly AgentDefinition[];
  /** Runs the judges: the run's Supervisor. */
  readonly spawner?: JudgeSpawner;
  readonly judgeIdSuffix?: string;
  readonly signal?: AbortSignal;
}

/** The plan's scorers, ready to score; undefined when the plan declares none. */
export async function createRunScoring(
  plan: RunPlan,
  options: RunScoringOptions,
): Promise<Scoring | undefined> {
  if (plan.scorers === undefined || plan.scorers.length === 0) return undefined;
  return Scoring.create({
    scorers: plan.scorers,
    ...(options.spawner === undefined ? {} : { spawner: options.spawner }),
    resolveAgent: (name) => findAgentDefinition(plan.cwd, options.definitions, name),
    provider: plan.provider.name,
    ...(plan.model === undefined ? {} : { model: plan.model }),
    judgeConcurrency: plan.concurrency,
    functionConcurrency: plan.concurrency,
    ...(options.judgeIdSuffix === undefined ? {} : { judgeIdSuffix: options.judgeIdSuffix }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
}

/**
 * Imports the plan's scorer modules, so that one that does not import, or whose export is not a
 * function, fails with `scorer_module` before a run directory is created (as plan problems do).
 */
export async function checkScorerModules(plan: Pick<RunPlan, 'scorers'>): Promise<void> {
  for (const spec of plan.scorers ?? []) if (spec.type === 'module') await loadScorerFunction(spec);
}

/**
 * The number whose suffix (`-s<n>`, none for 0) this session's judge ids get: `atLeast` (the
 * sessions the summary records), raised past every suffix a judge journal in `journalDir` already
 * has. A session killed outright records no session in the summary, but its judges' journals stay:
 * a later session must not spawn a judge under one of their ids, which would append a second
 * `Started` to a journal that then no longer verifies.
 */
export function judgeSessionNumber(journalDir: string, scorers: RunPlan['scorers'], atLeast: number): number {
  const judges = (scorers ?? []).filter((spec) => spec.type === 'judge').map((spec) => spec.name);
  if (judges.length === 0 || !existsSync(journalDir)) return atLeast;
  const files = readdirSync(journalDir);
  // Session 0 is unsuffixed in a run's first session, `-s0` when `troupe score` is the first.
  const taken = (n: number): boolean => {
    const suffixes = n > 0 ? [`-s${n}`] : ['', '-s0'];
    return judges.some((name) =>
      suffixes.some((suffix) => files.some((file) => file.endsWith(`-judge-${name}${suffix}.jsonl`))),
    );
  };
  let n = atLeast;
  while (taken(n)) n += 1;
  return n;
}

/** The scoring part of a summary: every plan entry with the scores of its latest result. */
export function scoringSummaryOf(
  plan: RunPlan,
  latest: ReadonlyMap<number, Pick<ResultLine, 'agentId' | 'scores'>>,
): ScoringSummary | undefined {
  if (plan.scorers === undefined || plan.scorers.length === 0) return undefined;
  return summarizeScores(
    plan.scorers,
    plan.runs.map((run) => {
      const line = latest.get(run.index);
      return {
        index: run.index,
        ...(run.label === undefined ? {} : { id: run.label }),
        agentId: line?.agentId ?? null,
        scores: line?.scores,
      };
    }),
  );
}
