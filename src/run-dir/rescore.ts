/**
 * `troupe score RUN_DIR [--plan FILE]`: scores a finished (or partly finished) run again, after
 * the fact. The scorers are the run's own (`plan.json`), or those of another plan file, whose
 * items' `expected` values then replace the run's: an item of that plan is matched to the run's
 * entry with the same `id`, else the same position. The latest result line of every plan entry
 * gets fresh scores; `results.jsonl`, `plan.json` (when the scorers changed) and `summary.json` are
 * rewritten, each atomically.
 *
 * Bounds: `results.jsonl` is read a line at a time, keeping what the summary needs of each line (a
 * ResultStore) and where each plan entry's latest line is; a line is read again when its turn to
 * be scored comes, and only its new scores are kept. The rewrite streams the file through again
 * into a temporary file renamed over it at the end (a failure leaves `results.jsonl` as it was).
 * Reading every line whole, a run of 100,000 2.7 KB lines held them all, and their rewrite as one
 * string, at once. Judges run on a Supervisor built from the run's provider, and their
 * journals go to the run's `journals/` with a `-s<n>` suffix (n = the sessions before this one)
 * so no earlier judge's journal is continued.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { AgentDefinition } from '../definition/types.ts';
import { UserError } from '../errors.ts';
import type { ItemScores, ScoringSummary } from '../eval/types.ts';
import type { SupervisorOptions } from '../supervisor/options.ts';
import { Supervisor } from '../supervisor/supervisor.ts';
import { loadAgentDefinitions } from './agent-files.ts';
import { MAX_RESULT_LINE_BYTES } from './constants.ts';
import { loadPlan } from './plan.ts';
import type { RowRef } from './plan-types.ts';
import { checkProvider } from './provider-choice.ts';
import { ResultStore } from './result-store.ts';
import type { ResultLine } from './results.ts';
import { RunDirWriter, readResults, readRunDirHead } from './run-dir.ts';
import type { PlannedRun, RunPlan } from './run-plan.ts';
import { createRunScoring, judgeSessionNumber, scoreInputOf } from './run-scoring.ts';
import { type RunSummary, recordedSessions, summarize } from './summary.ts';
import { type FileLine, fileLines, inputsOf, planInputsOf } from './task-rows.ts';
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
  /**
   * Bytes a line of `results.jsonl` may hold: a longer one is kept unread, as a line that is not
   * JSON is. Tests set a small one, so an over-long line is KBs, not hundreds of MiB.
   * @default MAX_RESULT_LINE_BYTES (256 MiB)
   */
  readonly maxLineBytes?: number;
}

/** What a re-scoring produced. */
export interface RescoreResult {
  readonly summary: RunSummary;
  readonly scoring: ScoringSummary;
  /** Plan entries that had a result to score. */
  readonly scored: number;
  /**
   * Lines of `results.jsonl` that are not result lines (not JSON, not a result, over
   * MAX_RESULT_LINE_BYTES, a torn last line): kept in the rewritten file byte for byte, unread.
   */
  readonly unread: Readonly<UnreadLines>;
}

/**
 * Scores the run in `dir` again. Throws UserError `not_a_run_dir`, `invalid_plan` (a bad
 * `--plan`), `no_scorers` (neither the run nor the plan declares any), and the provider's errors
 * when a judge needs it.
 */
export async function rescoreRunDir(dir: string, options: RescoreOptions = {}): Promise<RescoreResult> {
  const startedAt = new Date();
  const maxLineBytes = options.maxLineBytes ?? MAX_RESULT_LINE_BYTES;
  const head = readRunDirHead(dir);
  // What the summary needs of every line, and where each plan entry's latest line is.
  const lines = new ResultStore(head.plan.idPrefix);
  const latest = new Map<number, RowRef>();
  const read = readResults(
    head.paths.results,
    (line, at) => {
      lines.add(line);
      if (line.index !== null) latest.set(line.index, { offset: at.offset, length: at.length });
    },
    maxLineBytes,
  );
  const contents = { ...head, ...read, results: lines };
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
  // It reads each line's agentId, index and attempt only, which ResumeLines have.
  const unended = unendedAttempts({
    ...contents,
    results: [...lines.resumeLines()] as unknown as readonly ResultLine[],
  });
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
  // New scores by the offset of the line they replace the scores of.
  const rescored = new Map<number, ItemScores>();
  const fd = openSync(contents.paths.results, 'r');
  // At most `concurrency` entries are scored at once, each row read when its turn comes: scored
  // all at once, every row of the data set was read into memory before the first score was in.
  const { runs } = plan;
  let next = 0;
  let failed = false;
  const scoreNext = async (): Promise<void> => {
    for (let position = next++; position < runs.length && !failed; position = next++) {
      const run = runs[position];
      const at = run === undefined ? undefined : latest.get(run.index);
      if (run === undefined || at === undefined) continue;
      try {
        const line = lineAt(fd, at);
        const inputs = inputsOf(plan, contents.paths.root, run);
        rescored.set(at.offset, await scoring.score(scoreInputOf(run, inputs, line)));
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
    closeSync(fd);
    await supervisor?.close();
  }
  const writer = RunDirWriter.reopen(contents.paths.root);
  if (plan !== contents.plan) writer.rewritePlan(plan);
  // The lines as written, for the summary (filled as the rewrite goes).
  const written = new ResultStore(plan.idPrefix);
  const unread: UnreadLines = { count: 0 };
  writer.rewriteResults(rescoredLines(contents.paths.results, rescored, written, unread, maxLineBytes));
  // Counted as the reports count them: an entry whose current attempt started and has no line
  // (a killed `resume --retry-failed`) is interrupted, not the failure before it, nor complete.
  const summary = summarize(
    plan,
    written,
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
  return { summary, scoring: summary.scoring, scored: rescored.size, unread };
}

/** The result line at `at` in the file open as `fd`. */
function lineAt(fd: number, at: RowRef): ResultLine {
  const bytes = Buffer.alloc(at.length);
  readSync(fd, bytes, 0, at.length, at.offset);
  return JSON.parse(bytes.toString('utf8')) as ResultLine;
}

/** Lines of `results.jsonl` that `troupe score` kept as they were without reading them. */
export interface UnreadLines {
  /** How many (blank lines not counted). */
  count: number;
  /** The 1-based number of the first, when there is one. */
  firstLine?: number;
}

/** Bytes of a line over its bound copied at a time. */
const COPY_CHUNK_BYTES = 1 << 20;

/**
 * The lines of `file`, each with its `\n`, a line at a time: a result line whose offset `scores`
 * has gets those scores, every other line is kept byte for byte (a Buffer), and each result line
 * is added to `written` as it goes. What is not a result line (a line that does not parse, a torn
 * last line, which keeps its missing `\n`, a line over `maxLineBytes`, copied a chunk at a time)
 * is kept as it is and counted in `unread`: left out of the rewrite, it was lost.
 */
function* rescoredLines(
  file: string,
  scores: ReadonlyMap<number, ItemScores>,
  written: ResultStore,
  unread: UnreadLines,
  maxLineBytes: number,
): Generator<string | Buffer> {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    for (const at of fileLines(fd, maxLineBytes)) {
      const ended = at.offset + at.length < size;
      const line = ended ? resultLineOf(at) : undefined;
      if (line === undefined) {
        if (at.tooLong || at.text.trim() !== '') {
          unread.count += 1;
          unread.firstLine ??= at.number;
        }
        if (at.tooLong) yield* copyBytes(fd, at.offset, at.length);
        else yield Buffer.from(at.bytes);
        if (ended) yield '\n';
        continue;
      }
      const fresh = scores.get(at.offset);
      const kept = fresh === undefined ? line : { ...line, scores: fresh };
      written.add(kept);
      if (fresh === undefined) yield Buffer.concat([at.bytes, NEWLINE]);
      else yield `${JSON.stringify(kept)}\n`;
    }
  } finally {
    closeSync(fd);
  }
}

const NEWLINE = Buffer.from('\n');

/** The result line `at` holds, or undefined when it is over the bound, not JSON or not a result. */
function resultLineOf(at: FileLine): ResultLine | undefined {
  if (at.tooLong || at.text.trim() === '') return undefined;
  try {
    const line = JSON.parse(at.text) as ResultLine;
    if (typeof line.agentId !== 'string' || (line.status !== 'completed' && line.status !== 'failed'))
      return undefined;
    return line;
  } catch {
    return undefined;
  }
}

/** The `length` bytes of `fd` from `offset`, COPY_CHUNK_BYTES at a time. */
function* copyBytes(fd: number, offset: number, length: number): Generator<Buffer> {
  for (let done = 0; done < length; ) {
    const chunk = Buffer.allocUnsafe(Math.min(COPY_CHUNK_BYTES, length - done));
    const read = readSync(fd, chunk, 0, chunk.length, offset + done);
    if (read === 0) return;
    done += read;
    yield chunk.subarray(0, read);
  }
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
