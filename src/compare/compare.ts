/**
 * Comparing two run directories item by item: outcome, scores, tokens, cost, latency and tool
 * calls of every plan entry, and per-scorer pass rates.
 *
 * Matching rule: a plan entry with an `id` (in the plan or the tasks file) is matched with the
 * entry of the other run that has the same `id` (the n-th repeat of an id with the n-th repeat);
 * an entry without one is matched with the entry at the same position that has none either.
 * Entries left unmatched are listed as only in one run. Scorer pass rates are compared over the
 * matched entries only, so adding or dropping items does not move them.
 *
 * Bounds: `results.jsonl` of each run is read a line at a time (readResults), and of each plan
 * entry's latest line only what an {@link ItemSide} shows is kept: the first COMPARE_OUTPUT_CHARS
 * (200) characters of its output and a digest of the whole, its scores and figures. Each item's
 * task is kept as its first REPORT_TASK_CHARS (200) characters. Each run's totals are made as soon
 * as it is read, and of its plan only each entry's position, id and task excerpt is kept: the
 * second run is read with nothing of the first but those (both plans, with every entry's inputs,
 * and both runs' ResultStores were held to the end: ~1 GB of RSS at 100,000 items).
 */
import { createHash } from 'node:crypto';
import { COMPARE_OUTPUT_CHARS, COMPARE_TOOL_CALL_ITEMS } from '../constants.ts';
import { isTroupeError } from '../errors.ts';
import type { Score } from '../eval/types.ts';
import type { FailureReason } from '../loop/types.ts';
import type { Usage } from '../providers/types.ts';
import { runSummaryOf } from '../run-dir/report-text.ts';
import { ResultStore } from '../run-dir/result-store.ts';
import { deliveredText, latestByIndex, type ResultLine } from '../run-dir/results.ts';
import {
  journalFile,
  type RunDirContents,
  type RunDirPaths,
  type RunDirState,
  readResults,
  readRunDirHead,
} from '../run-dir/run-dir.ts';
import type { RunPlan } from '../run-dir/run-plan.ts';
import { inputsOf } from '../run-dir/task-rows.ts';
import { taskExcerpt } from '../run-dir/timeline.ts';
import { diffToolCalls, type ToolCallDiff, toolCallsOf } from './tool-calls.ts';

/** How an item ended in one run. */
export type ItemStatus = 'completed' | 'failed' | 'not_run';

/** One run's side of an item. */
export interface ItemSide {
  /** Plan position in this run. */
  readonly index: number;
  readonly agentId: string | null;
  readonly status: ItemStatus;
  readonly reason?: FailureReason;
  /** The failure's error code (failed). */
  readonly errorCode?: string;
  /**
   * The start of its output: the whole result as JSON (else the answer), or why it failed, as text;
   * its first COMPARE_OUTPUT_CHARS (200) characters (`outputChars` says whether there are more:
   * no `…` is added, which would double the memory of an ASCII excerpt). Empty when it did not run.
   */
  readonly output: string;
  /** Characters of the whole output (`output` holds at most the first 200). */
  readonly outputChars: number;
  /**
   * SHA-256 (hex) of the whole output's UTF-8 text: two sides delivered the same text exactly when
   * their digests are equal. Empty when it did not run.
   */
  readonly outputDigest: string;
  readonly scores: Readonly<Record<string, Omit<Score, 'judge'>>>;
  /** Input + output tokens. */
  readonly tokens: number;
  /** USD; null when a model's price is unknown. */
  readonly costUsd: number | null;
  /** From start to end; null when it never started. */
  readonly latencyMs: number | null;
  readonly rounds: number;
}

/** How a score moved between the runs. */
export type ScoreChange = 'same' | 'improved' | 'regressed' | 'only_a' | 'only_b';

/** One scorer on one item in both runs. */
export interface ScoreDelta {
  readonly a?: Omit<Score, 'judge'>;
  readonly b?: Omit<Score, 'judge'>;
  /** b.score - a.score when both exist. */
  readonly delta?: number;
  readonly change: ScoreChange;
}

/** How the outcome moved: `regressed` completed -> not completed, `fixed` the reverse. */
export type OutcomeChange = 'same' | 'fixed' | 'regressed' | 'changed' | 'only_a' | 'only_b';

/** One item compared. */
export interface ItemComparison {
  /** The matching key: `id:<id>` (repeats `id:<id>#2`...), or `#<position>`. */
  readonly key: string;
  readonly id?: string;
  /**
   * Its task (A's, else B's), its first REPORT_TASK_CHARS (200) characters then `…`; empty when
   * neither run's row of it can be read (`taskProblem`).
   */
  readonly task: string;
  /**
   * Why its task could not be read from A's `tasks.jsonl` (or B's, for an item only in B) (a row edited since it was
   * copied: `tasks_changed`; damaged or missing: `run_dir_io`). The item is still compared: the
   * task is not part of what is compared.
   */
  readonly taskProblem?: { readonly code: string; readonly message: string };
  readonly a?: ItemSide;
  readonly b?: ItemSide;
  readonly outcome: OutcomeChange;
  readonly scores: Readonly<Record<string, ScoreDelta>>;
  /** B minus A, when the item is in both runs and has the figure in both. */
  readonly tokensDelta?: number;
  readonly costDeltaUsd?: number;
  readonly latencyDeltaMs?: number;
  /**
   * Undefined when a journal is missing on either side, the item is only in one run, or tool
   * calls were not compared (see {@link RunComparison.toolCallsCompared}).
   */
  readonly toolCalls?: ToolCallDiff;
  /** Anything about this item differs: outcome, a score, the tool calls, or the output text. */
  readonly changed: boolean;
}

/** One scorer over the matched items. */
export interface ScorerComparison {
  readonly name: string;
  /** `a`, `b` or both runs declare it. */
  readonly declaredIn: 'a' | 'b' | 'both';
  /** Matched items. */
  readonly items: number;
  readonly passedA: number;
  readonly passedB: number;
  readonly passRateA: number;
  readonly passRateB: number;
  /** passRateB - passRateA. */
  readonly delta: number;
  readonly meanA: number;
  readonly meanB: number;
  readonly improved: number;
  readonly regressed: number;
}

/** What one run did in total (every agent of the run, nested ones included). */
export interface RunTotals {
  readonly runId: string;
  readonly name?: string;
  readonly dir: string;
  readonly provider: string;
  readonly model: string | null;
  readonly simulated: boolean;
  readonly items: number;
  readonly completed: number;
  readonly failed: number;
  readonly notRun: number;
  readonly usage: Usage;
  /** USD; null when a model's price is unknown. */
  readonly costUsd: number | null;
  readonly wallTimeMs: number;
  /** Mean latency of its plan entries that ran. */
  readonly meanLatencyMs: number | null;
}

/** `troupe compare`'s result. */
export interface RunComparison {
  readonly a: RunTotals;
  readonly b: RunTotals;
  /** Items in both runs, then only in A, then only in B (A's order, then B's). */
  readonly items: readonly ItemComparison[];
  readonly matched: number;
  readonly onlyA: number;
  readonly onlyB: number;
  readonly fixed: number;
  readonly regressed: number;
  /** By scorer name: every scorer either run declares. */
  readonly scorers: Readonly<Record<string, ScorerComparison>>;
  /**
   * Whether the items' tool calls were compared (read from their journals): see
   * {@link CompareOptions.toolCalls}. When not, `changed` is decided without them.
   */
  readonly toolCallsCompared: boolean;
}

/** Options of {@link compareRunDirs} and {@link compareRuns}. */
export interface CompareOptions {
  /**
   * Compare the tool calls of the items that ran in both runs, which only their journals hold
   * (two journals read per item). `true` always, `false` never; by default only when at most
   * `COMPARE_TOOL_CALL_ITEMS` (1,000) items ran in both, so comparing two 20,000-item runs reads
   * `results.jsonl` and `summary.json` alone.
   * @default 'auto'
   */
  readonly toolCalls?: boolean | 'auto';
}

/**
 * Compares the run directory `dirA` (the baseline) with `dirB`. Throws UserError `not_a_run_dir`
 * when either is not a fan-out run directory.
 *
 * @example
 * ```ts
 * const comparison = compareRunDirs('.troupe/runs/before', '.troupe/runs/after');
 * const [gate] = checkGates(comparison, [parseGate('verdict')]);
 * if (!gate?.ok) process.exitCode = 1;
 * ```
 */
export function compareRunDirs(dirA: string, dirB: string, options: CompareOptions = {}): RunComparison {
  return compareSources(readSource(dirA), readSource(dirB), options);
}

/** Compares run `a` (the baseline) with run `b`, as read by `readRunDir`. */
export function compareRuns(
  a: RunDirContents,
  b: RunDirContents,
  options: CompareOptions = {},
): RunComparison {
  return compareSources(sourceOf(a, a.results), sourceOf(b, b.results), options);
}

/** One run's side of an item as its result line has it. */
type LineSide = ItemSide;

/** What the comparison keeps of a plan entry: its position, id, and task excerpt or why it is unreadable. */
interface SlimRun {
  readonly index: number;
  readonly label?: string;
  readonly task: { readonly text: string } | { readonly problem: { code: string; message: string } };
}

/**
 * What the comparison keeps of one run: its totals, its scorers' names, each plan entry as a
 * {@link SlimRun}, and each plan entry's latest line as a {@link LineSide}.
 */
interface RunSource {
  readonly totals: RunTotals;
  readonly paths: RunDirPaths;
  readonly scorers: readonly string[];
  readonly runs: readonly SlimRun[];
  readonly latest: ReadonlyMap<number, LineSide>;
}

/** Reads the run directory `dir` a result line at a time (see the file's comment). */
function readSource(dir: string): RunSource {
  const head = readRunDirHead(dir);
  const results = new ResultStore(head.plan.idPrefix);
  const latest = new Map<number, LineSide>();
  const read = readResults(head.paths.results, (line) => {
    results.add(line);
    if (line.index !== null) latest.set(line.index, lineSide(line, line.index));
  });
  return slimSource({ ...head, ...read, results }, latest);
}

function sourceOf(contents: RunDirContents, lines: readonly ResultLine[]): RunSource {
  const latest = new Map<number, LineSide>();
  for (const [index, line] of latestByIndex(lines)) latest.set(index, lineSide(line, index));
  return slimSource({ ...contents, results: new ResultStore(contents.plan.idPrefix, lines) }, latest);
}

/** What the comparison keeps of `contents`: nothing that holds a plan entry's inputs or a result line. */
function slimSource(contents: RunDirState, latest: ReadonlyMap<number, LineSide>): RunSource {
  return {
    totals: totals(contents, latest),
    paths: contents.paths,
    scorers: (contents.plan.scorers ?? []).map((scorer) => scorer.name),
    runs: contents.plan.runs.map((run) => ({
      index: run.index,
      ...(run.label === undefined ? {} : { label: run.label }),
      task: taskOf(contents.plan, contents.paths.root, run),
    })),
    latest,
  };
}

/** A plan entry's task excerpt, or why it cannot be read (a row edited since it was copied, damage). */
function taskOf(plan: RunPlan, root: string, run: RunPlan['runs'][number]): SlimRun['task'] {
  try {
    return { text: taskExcerpt(inputsOf(plan, root, run).task) };
  } catch (error) {
    return {
      problem: {
        code: isTroupeError(error) ? error.code : 'run_dir_io',
        message: error instanceof Error ? error.message : String(error),
      },
    };
  }
}

function compareSources(sourceA: RunSource, sourceB: RunSource, options: CompareOptions): RunComparison {
  const a = sourceA;
  const b = sourceB;
  const sidesA = sides(sourceA);
  const sidesB = sides(sourceB);
  let ranInBoth = 0;
  for (const [key, left] of sidesA) if (left.line && sidesB.get(key)?.line) ranInBoth += 1;
  const wanted = options.toolCalls ?? 'auto';
  const toolCallsCompared = wanted === 'auto' ? ranInBoth <= COMPARE_TOOL_CALL_ITEMS : wanted;
  const items: ItemComparison[] = [];
  for (const [key, left] of sidesA) {
    const right = sidesB.get(key);
    items.push(compareItem(key, left, right, a, b, toolCallsCompared));
  }
  for (const [key, right] of sidesB)
    if (!sidesA.has(key)) items.push(compareItem(key, undefined, right, a, b, toolCallsCompared));
  const names = [...new Set([...a.scorers, ...b.scorers])];
  const inA = new Set(a.scorers);
  const inB = new Set(b.scorers);
  const matchedItems = items.filter((item) => item.a !== undefined && item.b !== undefined);
  const scorers: Record<string, ScorerComparison> = {};
  for (const name of names) scorers[name] = compareScorer(name, inA.has(name), inB.has(name), matchedItems);
  return {
    a: sourceA.totals,
    b: sourceB.totals,
    items,
    matched: matchedItems.length,
    onlyA: items.filter((item) => item.outcome === 'only_a').length,
    onlyB: items.filter((item) => item.outcome === 'only_b').length,
    fixed: items.filter((item) => item.outcome === 'fixed').length,
    regressed: items.filter((item) => item.outcome === 'regressed').length,
    scorers,
    toolCallsCompared,
  };
}

interface Side {
  readonly run: SlimRun;
  readonly line: LineSide | undefined;
}

/** Plan entries by matching key, in plan order. */
function sides({ runs, latest }: RunSource): Map<string, Side> {
  const seen = new Map<string, number>();
  const result = new Map<string, Side>();
  for (const run of runs) {
    let key = `#${run.index}`;
    if (run.label !== undefined) {
      const count = (seen.get(run.label) ?? 0) + 1;
      seen.set(run.label, count);
      key = count === 1 ? `id:${run.label}` : `id:${run.label}#${count}`;
    }
    result.set(key, { run, line: latest.get(run.index) });
  }
  return result;
}

function itemSide(side: Side): ItemSide {
  const { run, line } = side;
  if (line === undefined)
    return {
      index: run.index,
      agentId: null,
      status: 'not_run',
      output: '',
      outputChars: 0,
      outputDigest: '',
      scores: {},
      tokens: 0,
      costUsd: 0,
      latencyMs: null,
      rounds: 0,
    };
  return line;
}

/** What an item's side shows of result line `line`: its output cut to an excerpt and a digest. */
function lineSide(line: ResultLine, index: number): LineSide {
  const scores: Record<string, Omit<Score, 'judge'>> = {};
  for (const [name, { judge: _judge, ...score }] of Object.entries(line.scores ?? {})) scores[name] = score;
  const output = deliveredText(line);
  return {
    index,
    agentId: line.agentId,
    status: line.status,
    ...(line.reason === undefined ? {} : { reason: line.reason }),
    ...(line.error?.code === undefined ? {} : { errorCode: line.error.code }),
    output: textStart(output, COMPARE_OUTPUT_CHARS),
    outputChars: output.length,
    outputDigest: createHash('sha256').update(output, 'utf8').digest('hex'),
    scores,
    tokens: line.usage.inputTokens + line.usage.outputTokens,
    costUsd: line.costUsd,
    latencyMs:
      line.startedAt === null ? null : Math.max(0, Date.parse(line.endedAt) - Date.parse(line.startedAt)),
    rounds: line.rounds,
  };
}

function compareItem(
  key: string,
  left: Side | undefined,
  right: Side | undefined,
  a: RunSource,
  b: RunSource,
  withToolCalls: boolean,
): ItemComparison {
  const run = (left ?? right)?.run;
  const sideA = left === undefined ? undefined : itemSide(left);
  const sideB = right === undefined ? undefined : itemSide(right);
  const { task, problem } = itemTask(left, right);
  const outcome = outcomeChange(sideA, sideB);
  const names = new Set([...Object.keys(sideA?.scores ?? {}), ...Object.keys(sideB?.scores ?? {})]);
  const scores: Record<string, ScoreDelta> = {};
  for (const name of names) scores[name] = scoreDelta(sideA?.scores[name], sideB?.scores[name]);
  let toolCalls: ToolCallDiff | undefined;
  if (withToolCalls && sideA?.agentId && sideB?.agentId) {
    const callsA = toolCallsOf(journalFile(a.paths, sideA.agentId));
    const callsB = toolCallsOf(journalFile(b.paths, sideB.agentId));
    if (callsA !== undefined && callsB !== undefined) toolCalls = diffToolCalls(callsA, callsB);
  }
  const both =
    sideA !== undefined && sideB !== undefined && sideA.status !== 'not_run' && sideB.status !== 'not_run';
  const changed =
    outcome !== 'same' ||
    Object.values(scores).some((delta) => delta.change !== 'same') ||
    (toolCalls !== undefined && (toolCalls.onlyA.length > 0 || toolCalls.onlyB.length > 0)) ||
    (both && !sameOutput(sideA, sideB));
  return {
    key,
    ...(run?.label === undefined ? {} : { id: run.label }),
    task,
    ...(problem === undefined ? {} : { taskProblem: problem }),
    ...(sideA === undefined ? {} : { a: sideA }),
    ...(sideB === undefined ? {} : { b: sideB }),
    outcome,
    scores,
    ...(both
      ? {
          tokensDelta: sideB.tokens - sideA.tokens,
          ...(sideA.costUsd === null || sideB.costUsd === null
            ? {}
            : { costDeltaUsd: sideB.costUsd - sideA.costUsd }),
        }
      : {}),
    ...(both && sideA.latencyMs !== null && sideB.latencyMs !== null
      ? { latencyDeltaMs: sideB.latencyMs - sideA.latencyMs }
      : {}),
    ...(toolCalls === undefined ? {} : { toolCalls }),
    changed,
  };
}

/**
 * An item's task, from A's row (else B's): a row that cannot be read (`tasks_changed`,
 * `run_dir_io`) is that item's problem, not the comparison's (reported even when B's is read).
 */
function itemTask(
  left: Side | undefined,
  right: Side | undefined,
): { task: string; problem?: { code: string; message: string } } {
  let problem: { code: string; message: string } | undefined;
  for (const side of [left, right]) {
    if (side === undefined) continue;
    const { task } = side.run;
    if ('text' in task) return problem === undefined ? { task: task.text } : { task: task.text, problem };
    problem ??= task.problem;
  }
  return problem === undefined ? { task: '' } : { task: '', problem };
}

/**
 * Whether two sides delivered the same: the same result text, or failures with the same reason
 * and error code (their messages carry what differs from run to run: a server's port, a time).
 */
function sameOutput(a: ItemSide, b: ItemSide): boolean {
  if (a.status === 'failed' && b.status === 'failed')
    return a.reason === b.reason && a.errorCode === b.errorCode;
  return a.outputDigest === b.outputDigest;
}

/**
 * The first `chars` characters of `text`, as a string of its own: a slice of a longer string keeps
 * the whole of it in memory (V8 makes slices views of their parent).
 */
function textStart(text: string, chars: number): string {
  if (text.length <= chars) return text;
  let end = chars;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return Buffer.from(text.slice(0, end), 'utf8').toString('utf8');
}

function outcomeChange(a: ItemSide | undefined, b: ItemSide | undefined): OutcomeChange {
  if (a === undefined) return 'only_b';
  if (b === undefined) return 'only_a';
  if (a.status === b.status) return a.status === 'failed' && a.reason !== b.reason ? 'changed' : 'same';
  if (a.status === 'completed') return 'regressed';
  if (b.status === 'completed') return 'fixed';
  return 'changed';
}

function scoreDelta(a: Omit<Score, 'judge'> | undefined, b: Omit<Score, 'judge'> | undefined): ScoreDelta {
  if (a === undefined && b !== undefined) return { b, change: 'only_b' };
  if (b === undefined && a !== undefined) return { a, change: 'only_a' };
  if (a === undefined || b === undefined) return { change: 'same' };
  const delta = b.score - a.score;
  const change: ScoreChange =
    a.pass !== b.pass
      ? b.pass
        ? 'improved'
        : 'regressed'
      : delta > 0
        ? 'improved'
        : delta < 0
          ? 'regressed'
          : 'same';
  return { a, b, delta, change };
}

function compareScorer(
  name: string,
  inA: boolean,
  inB: boolean,
  items: readonly ItemComparison[],
): ScorerComparison {
  let passedA = 0;
  let passedB = 0;
  let sumA = 0;
  let sumB = 0;
  let improved = 0;
  let regressed = 0;
  for (const item of items) {
    const delta = item.scores[name];
    if (delta?.a?.pass) passedA += 1;
    if (delta?.b?.pass) passedB += 1;
    sumA += delta?.a?.score ?? 0;
    sumB += delta?.b?.score ?? 0;
    if (delta?.change === 'improved') improved += 1;
    if (delta?.change === 'regressed') regressed += 1;
  }
  const count = items.length;
  const rate = (value: number): number => (count === 0 ? 0 : value / count);
  return {
    name,
    declaredIn: inA && inB ? 'both' : inA ? 'a' : 'b',
    items: count,
    passedA,
    passedB,
    passRateA: rate(passedA),
    passRateB: rate(passedB),
    delta: rate(passedB) - rate(passedA),
    meanA: rate(sumA),
    meanB: rate(sumB),
    improved,
    regressed,
  };
}

function totals(contents: RunDirState, latest: ReadonlyMap<number, LineSide>): RunTotals {
  const summary = runSummaryOf(contents);
  const latencies: number[] = [];
  for (const line of latest.values()) if (line.latencyMs !== null) latencies.push(line.latencyMs);
  return {
    runId: contents.plan.runId,
    ...(contents.plan.name === undefined ? {} : { name: contents.plan.name }),
    dir: contents.paths.root,
    provider: contents.plan.provider.name,
    model: summary.model,
    simulated: contents.plan.provider.simulated,
    items: summary.counts.planned,
    completed: summary.counts.completed,
    failed: summary.counts.failed,
    notRun: summary.counts.notRun,
    usage: summary.usage,
    costUsd: summary.costUsd,
    wallTimeMs: summary.wallTimeMs,
    meanLatencyMs: latencies.length === 0 ? null : latencies.reduce((x, y) => x + y, 0) / latencies.length,
  };
}
