/**
 * The run directory: `plan.json` (written first), `tasks.jsonl` (for a plan over a tasks file: the
 * run's own copy of its rows, see task-rows.ts), `results.jsonl` (one line appended per agent as it
 * ends), `journals/<agent-id>.jsonl` (written by the agents' threads), `events.jsonl` (sessions,
 * threads, restarts and provider pauses as they happen; see run-log.ts) and `summary.json`
 * (written at the end, on interrupt, and again by `troupe resume`).
 *
 * Result lines are appended synchronously: the lines of the agents that end in one turn of the event
 * loop go in one write at the end of that turn (a Ctrl-C ends thousands of queued agents in one
 * turn: a write each took seconds). A killed process leaves at most a torn last line; readers
 * ignore it and {@link RunDirWriter.reopen} cuts it away before appending. A process killed
 * outright can leave out the lines of its last turn: the agents' journals have their outcomes,
 * which `troupe resume` takes from there (plan entries' and nested agents', see resume-plan.ts).
 *
 * Every file is written through `redactValue`, like journals: a credential in a task, an answer or
 * an error message, and any value under a secret-named key (`metadata.apiKey`), never reach disk.
 */
import {
  appendFileSync,
  closeSync,
  existsSync,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { isTroupeError, SystemError, UserError } from '../errors.ts';
import { makeDirectories } from '../journal/make-directories.ts';
import { redactValue } from '../journal/redact.ts';
import { DEFAULT_RUNS_DIR, MAX_RESULT_LINE_BYTES, RUN_DIR_FORMAT, TASK_ROWS_FILE } from './constants.ts';
import { ioErrorText } from './io-error-text.ts';
import { ResultStore } from './result-store.ts';
import { type ResultLine, reportLine } from './results.ts';
import { appendRunLog, type RunLogEvent, readRunLog } from './run-log.ts';
import type { RunPlan } from './run-plan.ts';
import type { RunSummary } from './summary.ts';
import { copyTaskRows, type FileLine, fileLines } from './task-rows.ts';

/** Files of a run directory. */
export interface RunDirPaths {
  readonly root: string;
  readonly plan: string;
  readonly results: string;
  readonly summary: string;
  readonly journals: string;
  /** `events.jsonl`: the run's own events (see run-log.ts). */
  readonly events: string;
  /** `tasks.jsonl`: the rows of the plan's tasks file (see task-rows.ts). */
  readonly tasks: string;
}

/** The files of the run directory `root`. */
export function runDirPaths(root: string): RunDirPaths {
  const absolute = resolve(root);
  return {
    root: absolute,
    plan: join(absolute, 'plan.json'),
    results: join(absolute, 'results.jsonl'),
    summary: join(absolute, 'summary.json'),
    journals: join(absolute, 'journals'),
    events: join(absolute, 'events.jsonl'),
    tasks: join(absolute, TASK_ROWS_FILE),
  };
}

/** The journal file of `agentId`. */
export function journalFile(paths: RunDirPaths, agentId: string): string {
  return join(paths.journals, `${agentId}.jsonl`);
}

/** Default run directory of `runId`: `.troupe/runs/<runId>` under `cwd`. */
export function defaultRunDir(cwd: string, runId: string): string {
  return resolve(cwd, DEFAULT_RUNS_DIR, runId);
}

/** Appends results to a run directory and writes its summary. */
export class RunDirWriter {
  readonly paths: RunDirPaths;
  /**
   * The plan as `plan.json` holds it, set by {@link RunDirWriter.create}: the entries of a tasks
   * file point into the run directory's `tasks.jsonl`. Undefined for {@link RunDirWriter.reopen}.
   */
  readonly plan: RunPlan | undefined;
  /** Result lines of this turn of the event loop, not yet written. */
  #pending: string[] = [];
  #flushing: NodeJS.Immediate | undefined;
  /** Why the last write at the end of a turn failed: thrown by the next append or flush. */
  #failure: unknown;

  private constructor(paths: RunDirPaths, plan?: RunPlan) {
    this.paths = paths;
    this.plan = plan;
  }

  /**
   * Creates the run directory `root`, copies the rows of the plan's tasks file into its
   * `tasks.jsonl` and writes `plan.json`: run the session with {@link RunDirWriter.plan}, whose
   * entries point into that copy. Throws UserError `run_dir_exists` when `root` already holds a run
   * (resume it with `troupe resume` instead), and `tasks_changed` when the tasks file changed since
   * the plan was read.
   */
  static create(root: string, plan: RunPlan): RunDirWriter {
    const paths = runDirPaths(root);
    if (existsSync(paths.plan) || existsSync(paths.results)) {
      throw new UserError(
        'run_dir_exists',
        `Expected a new or empty run directory, but ${paths.root} already holds a run; use \`troupe resume ${paths.root}\` to finish it`,
        { runDir: paths.root },
      );
    }
    // The first directory this made, if any: removed with what is in it when the rows cannot be
    // copied, so a refused run leaves no directory behind.
    const created = makeRunDir(paths.journals);
    const rows = plan.taskRows;
    let stored = plan;
    if (rows !== undefined && isAbsolute(rows.file)) {
      try {
        stored = {
          ...plan,
          runs: copyTaskRows(rows.file, paths.root, plan.runs),
          taskRows: { ...rows, file: TASK_ROWS_FILE },
        };
      } catch (error) {
        rmSync(paths.tasks, { force: true });
        if (created !== undefined) rmSync(created, { recursive: true, force: true });
        throw error;
      }
    }
    writePlanFile(paths.plan, stored, true);
    writeFileSync(paths.results, '');
    return new RunDirWriter(paths, stored);
  }

  /** Opens an existing run directory for appending; a torn last result line is cut away first. */
  static reopen(root: string): RunDirWriter {
    const paths = runDirPaths(root);
    makeRunDir(paths.journals);
    if (existsSync(paths.results)) {
      const { size, end } = completeLinesEnd(paths.results);
      if (end < size) truncateSync(paths.results, end);
    } else {
      writeFileSync(paths.results, '');
    }
    return new RunDirWriter(paths);
  }

  /** Appends one line to `events.jsonl` (one synchronous write). */
  log(event: RunLogEvent): void {
    appendRunLog(this.paths.events, event);
  }

  /**
   * Appends one result line: written with the other lines of this turn of the event loop, in one
   * synchronous write at its end (or at {@link flush}, whichever comes first).
   */
  append(line: ResultLine): void {
    this.#throwFailure();
    this.#pending.push(`${JSON.stringify(redactValue(line))}\n`);
    this.#flushing ??= setImmediate(() => {
      try {
        this.flush();
      } catch (error) {
        this.#failure = error;
      }
    });
  }

  /** Writes the result lines appended and not yet written, at once (one synchronous write). */
  flush(): void {
    if (this.#flushing !== undefined) clearImmediate(this.#flushing);
    this.#flushing = undefined;
    this.#throwFailure();
    if (this.#pending.length === 0) return;
    const text = this.#pending.join('');
    this.#pending = [];
    try {
      appendFileSync(this.paths.results, text);
    } catch (error) {
      throw new SystemError(
        'run_dir_io',
        `Could not write ${this.paths.results}: ${ioErrorText(error)}`,
        { path: this.paths.results },
        { cause: error },
      );
    }
  }

  #throwFailure(): void {
    if (this.#failure === undefined) return;
    const failure = this.#failure;
    this.#failure = undefined;
    throw failure;
  }

  /**
   * Replaces `results.jsonl` as a whole with `lines` (each a whole line of text with its `\n`), in
   * writes of at most 1 MB to a temporary file renamed over it at the end: the lines may be read
   * from the file being replaced as they are written, and a failure leaves it as it was.
   * `troupe score` rewrites the lines with new scores. Only for a run no other command is
   * appending to. A Buffer piece is written as soon as it comes (its bytes as they are, so a line
   * that is not valid UTF-8 is kept byte for byte), after the strings before it.
   */
  rewriteResults(lines: Iterable<string | Buffer>): void {
    this.flush();
    writePieces(this.paths.results, lines, false);
  }

  /** Replaces `plan.json` (temporary file, then rename): `troupe score --plan` records the new scorers. */
  rewritePlan(plan: RunPlan): void {
    writePlanFile(this.paths.plan, plan, false);
  }

  /**
   * Replaces `summary.json` (written to a temporary file, then renamed, so it is never half
   * written), masked a member or array item at a time and written a piece at a time: as one
   * masked copy and one string, the summary of a 100,000-line run took three times its own heap.
   */
  writeSummary(summary: RunSummary): void {
    this.flush();
    writePieces(this.paths.summary, summaryPieces(summary, '', true), true);
  }
}

/**
 * JSON indented by two spaces, but each object in an array on one line: `summary.json` has one
 * entry per agent in `agents` and per plan entry in `scoring.items`, and indented in full a
 * 20,000-task run's summary took 14 MB (8 MB so).
 */
export function summaryText(value: unknown, indent = ''): string {
  return [...summaryPieces(value, indent, false)].join('');
}

/**
 * {@link summaryText} a piece at a time; with `redact`, each leaf and array item masked with
 * `redactValue` on its way out (the same text as masking the whole value first: masking depends
 * on the keys above a value, and a member under a secret-named key is masked as a whole).
 */
function* summaryPieces(value: unknown, indent: string, redact: boolean): Generator<string> {
  const inner = `${indent}  `;
  const masked = <T>(item: T): T => (redact ? redactValue(item) : item);
  if (Array.isArray(value)) {
    if (value.length === 0 || !value.every(isPlainObject)) {
      yield JSON.stringify(masked(value));
      return;
    }
    yield '[\n';
    for (let position = 0; position < value.length; position += 1)
      yield `${position === 0 ? '' : ',\n'}${inner}${JSON.stringify(masked(value[position]))}`;
    yield `\n${indent}]`;
    return;
  }
  if (!isPlainObject(value)) {
    yield JSON.stringify(masked(value)) ?? 'null';
    return;
  }
  const members = Object.entries(value).filter(([, member]) => member !== undefined);
  if (members.length === 0) {
    yield '{}';
    return;
  }
  yield '{\n';
  let first = true;
  for (const [key, member] of members) {
    yield `${first ? '' : ',\n'}${inner}${JSON.stringify(key)}: `;
    first = false;
    if (redact && isSecretKey(key)) yield* summaryPieces(redactValue({ [key]: member })[key], inner, false);
    else yield* summaryPieces(member, inner, redact);
  }
  yield `\n${indent}}`;
}

/** True when `redactValue` masks whatever is under `key` (an `apiKey`, a `token`). */
function isSecretKey(key: string): boolean {
  const probe = 'x';
  return redactValue({ [key]: probe })[key] !== probe;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A bad line in `results.jsonl` (other than a torn last line). */
export interface ResultsProblem {
  readonly line: number;
  readonly message: string;
}

/** What a run directory holds besides its result lines. */
export interface RunDirHead {
  readonly paths: RunDirPaths;
  readonly plan: RunPlan;
  readonly summary: RunSummary | undefined;
  /** `events.jsonl` (empty for run directories written before it existed). */
  readonly events: readonly RunLogEvent[];
}

/** What reading `results.jsonl` found besides its lines. */
export interface ResultsRead {
  /** The last line was cut short (the process died while writing it) and is left out. */
  readonly tornTail: boolean;
  readonly problems: readonly ResultsProblem[];
}

/** What a run directory holds. */
export interface RunDirContents extends RunDirHead, ResultsRead {
  /** Result lines in file order. */
  readonly results: readonly ResultLine[];
}

/**
 * A run directory with what `summary.json` and `troupe resume` need of its result lines only, in a
 * {@link ResultStore}: no answer, result, error or metadata of any line is held.
 */
export interface RunDirState extends RunDirHead, ResultsRead {
  readonly results: ResultStore;
}

/**
 * Reads the run directory `root`. Throws UserError `not_a_run_dir` when it has no readable
 * `plan.json` of a known format.
 */
export function readRunDir(root: string): RunDirContents {
  const head = readRunDirHead(root);
  const results: ResultLine[] = [];
  const read = readResults(head.paths.results, (line) => results.push(line));
  return { ...head, results, ...read };
}

/**
 * Reads the run directory `root` as {@link readRunDir} does, each result line cut to what the
 * reports show of it as it is read (see `reportLine`): a long result is kept as the start of its
 * outcome text. For `troupe report`.
 */
export function readRunDirForReport(root: string): RunDirContents {
  const head = readRunDirHead(root);
  const results: ResultLine[] = [];
  const read = readResults(head.paths.results, (line) => results.push(reportLine(line)));
  return { ...head, results, ...read };
}

/**
 * Reads the run directory `root` as {@link readRunDir} does, its result lines a stream into a
 * {@link ResultStore}: at most one parsed line is held at a time (`troupe resume` of 20,000 lines
 * held them all, ~14 MB of their answers and errors, and a copy of what the summary needs of each).
 */
export function readRunDirState(root: string): RunDirState {
  const head = readRunDirHead(root);
  const results = new ResultStore(head.plan.idPrefix);
  const read = readResults(head.paths.results, (line) => results.add(line));
  return { ...head, results, ...read };
}

/** Reads the run directory `root` but for its result lines (see {@link readRunDir}). */
export function readRunDirHead(root: string): RunDirHead {
  const paths = runDirPaths(root);
  const plan = readJson(paths.plan) as RunPlan | undefined;
  if (
    !isDirectory(paths.root) ||
    plan === undefined ||
    plan.format !== RUN_DIR_FORMAT ||
    !Array.isArray(plan.runs)
  ) {
    throw new UserError(
      'not_a_run_dir',
      `Expected a troupe run directory with a plan.json (format ${RUN_DIR_FORMAT}) at ${paths.root}, found none`,
      { runDir: paths.root },
    );
  }
  const summary = readJson(paths.summary) as RunSummary | undefined;
  return { paths, plan, summary, events: readRunLog(paths.events) };
}

/**
 * Reads `results.jsonl` at `file` a line at a time, handing each result line to `visit` as it is
 * parsed: the file is never in memory, only the line being read (and the one before it, until it
 * is known not to be a torn last line), with where it is in the file (`at`: its offset, length and
 * number). A torn last line is ignored; other bad lines, and a line
 * over `maxLineBytes` (skipped unread), become problems. A missing file has no lines.
 */
export function readResults(
  file: string,
  visit: (line: ResultLine, at: FileLine) => void,
  maxLineBytes: number = MAX_RESULT_LINE_BYTES,
): ResultsRead {
  const problems: ResultsProblem[] = [];
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return { tornTail: false, problems };
  }
  let pending: FileLine | undefined;
  try {
    for (const line of fileLines(fd, maxLineBytes)) {
      if (pending !== undefined) parseResultLine(pending, visit, problems, maxLineBytes);
      pending = line;
    }
    // A last line ends the file without a `\n` when it ends where the bytes read end.
    const size = fstatSync(fd).size;
    const torn = pending !== undefined && pending.offset + pending.length >= size && size > 0;
    if (pending !== undefined && !torn) parseResultLine(pending, visit, problems, maxLineBytes);
    return { tornTail: torn, problems };
  } finally {
    closeSync(fd);
  }
}

function parseResultLine(
  line: FileLine,
  visit: (line: ResultLine, at: FileLine) => void,
  problems: ResultsProblem[],
  maxLineBytes: number,
): void {
  if (line.tooLong) {
    problems.push({ line: line.number, message: `longer than ${maxLineBytes} bytes (${line.length})` });
    return;
  }
  if (line.text.trim() === '') return;
  try {
    const value = JSON.parse(line.text) as ResultLine;
    if (typeof value.agentId !== 'string' || (value.status !== 'completed' && value.status !== 'failed'))
      problems.push({ line: line.number, message: 'not a result line' });
    else visit(value, line);
  } catch (error) {
    problems.push({ line: line.number, message: error instanceof Error ? error.message : String(error) });
  }
}

/** Parses `results.jsonl` text: a torn last line is ignored, other bad lines become problems. */
export function parseResults(text: string): {
  results: ResultLine[];
  tornTail: boolean;
  problems: ResultsProblem[];
} {
  const results: ResultLine[] = [];
  const problems: ResultsProblem[] = [];
  const lines = text.split('\n');
  const tornTail = lines.at(-1) !== '';
  lines.pop();
  lines.forEach((content, offset) => {
    if (content.trim() === '') return;
    try {
      const value = JSON.parse(content) as ResultLine;
      if (typeof value.agentId !== 'string' || (value.status !== 'completed' && value.status !== 'failed'))
        problems.push({ line: offset + 1, message: 'not a result line' });
      else results.push(value);
    } catch (error) {
      problems.push({ line: offset + 1, message: error instanceof Error ? error.message : String(error) });
    }
  });
  return { results, tornTail, problems };
}

/**
 * The file's size and where its last `\n` ends, found by reading backwards from its end a chunk
 * at a time (a kill leaves at most one torn line; the file is not read whole to find it).
 */
function completeLinesEnd(file: string): { size: number; end: number } {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    const chunk = Buffer.allocUnsafe(TAIL_CHUNK_BYTES);
    for (let end = size; end > 0; ) {
      const start = Math.max(0, end - TAIL_CHUNK_BYTES);
      const read = readSync(fd, chunk, 0, end - start, start);
      const newline = chunk.subarray(0, read).lastIndexOf(0x0a);
      if (newline >= 0) return { size, end: start + newline + 1 };
      end = start;
    }
    return { size, end: 0 };
  } finally {
    closeSync(fd);
  }
}

/** Bytes read at a time from the end of `results.jsonl` to find its last line end. */
const TAIL_CHUNK_BYTES = 64 * 1024;

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Writes `plan.json` (temporary file, then rename) a run entry a line, in writes of at most
 * PLAN_WRITE_BYTES: as one JSON.stringify, a 20,000-row plan was one 45 MB string (+47 MB of heap
 * at its peak). With `redact`, every entry is masked with `redactValue` on its way out.
 */
function writePlanFile(path: string, plan: RunPlan, redact: boolean): void {
  writePieces(path, planPieces(plan, redact), false);
}

function* planPieces(plan: RunPlan, redact: boolean): Generator<string> {
  const { runs, ...rest } = plan;
  const head = JSON.stringify(redact ? redactValue(rest) : rest, null, 2);
  // `head` ends with `\n}`: the runs go in before it.
  yield `${head.slice(0, -2)},\n  "runs": [`;
  for (const [position, run] of runs.entries())
    yield `${position === 0 ? '' : ','}\n    ${JSON.stringify(redact ? redactValue(run) : run)}`;
  yield runs.length === 0 ? ']\n}\n' : '\n  ]\n}\n';
}

/** Characters of `plan.json` (and `summary.json`) written at a time. */
const PLAN_WRITE_BYTES = 1 << 20;

/**
 * Writes `pieces` to `path` (temporary file, then rename) in writes of at most PLAN_WRITE_BYTES
 * characters, and a final line end when `newline`. A Buffer piece is written at once, as it is.
 */
function writePieces(path: string, pieces: Iterable<string | Buffer>, newline: boolean): void {
  const temporary = `${path}.tmp-${process.pid}`;
  let fd: number | undefined;
  try {
    fd = openSync(temporary, 'w');
    const output = fd;
    let pending: string[] = [];
    let bytes = 0;
    const flush = (): void => {
      if (pending.length > 0) writeSync(output, pending.join(''));
      pending = [];
      bytes = 0;
    };
    for (const piece of pieces) {
      if (typeof piece !== 'string') {
        flush();
        writeSync(output, piece);
        continue;
      }
      pending.push(piece);
      bytes += piece.length;
      if (bytes >= PLAN_WRITE_BYTES) flush();
    }
    if (newline) pending.push('\n');
    flush();
    closeSync(output);
    fd = undefined;
    renameSync(temporary, path);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
    rmSync(temporary, { force: true });
    if (isTroupeError(error)) throw error;
    throw new SystemError(
      'run_dir_io',
      `Could not write ${path}: ${ioErrorText(error)}`,
      { path },
      { cause: error },
    );
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * `mkdir -p` of a new run directory's `journals/`, returning the first directory it made. A path
 * it cannot be made at (`--out` under a file: ENOTDIR; no permission) is `run_dir_io`, not a crash.
 */
function makeRunDir(journals: string): string | undefined {
  try {
    return makeDirectories(journals);
  } catch (error) {
    throw new SystemError(
      'run_dir_io',
      `Expected a run directory that can be created, could not create ${dirname(journals)}: ${ioErrorText(error)}`,
      { path: dirname(journals), errno: (error as NodeJS.ErrnoException).code },
      { cause: error },
    );
  }
}
