/**
 * The rows of a tasks file, kept out of memory. A plan over a JSONL data set holds, per row, only
 * what schedules and reports it (index, agent, label, line, and the row's byte offset and length);
 * the row's task, context, metadata and expected value are read from the file when the row's spawn
 * spec is built, when it is scored, and when a report shows it. Held in memory, a data set of
 * 20,000 rows of 2 KB took ~44 MB of heap for the whole run, and its plan.json one 45 MB string.
 *
 * A run directory keeps its own copy of the rows, `tasks.jsonl`, written when the directory is
 * created ({@link copyTaskRows}): one masked (`redactValue`) JSON object per row, in plan order.
 * `troupe resume` reads the rows from there, so editing the tasks file afterwards changes nothing.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { SystemError, UserError } from '../errors.ts';
import { redactValue } from '../journal/redact.ts';
import { MAX_TASK_LINE_BYTES, TASK_ROWS_FILE } from './constants.ts';
import { ioErrorText } from './io-error-text.ts';
import type { Plan, PlanRun, RowRef, RunInputs } from './plan-types.ts';

/** Bytes read from a tasks file at a time. */
const CHUNK_BYTES = 1 << 20;
/** Bytes of the copy written at a time. */
const WRITE_BYTES = 1 << 20;

/** One line of a file: its 1-based number, its bytes (offset, length, without `\n`) and text. */
export interface FileLine extends RowRef {
  readonly number: number;
  /** The line as UTF-8 text; empty for a line over the bound (`tooLong`). */
  readonly text: string;
  /**
   * The line's bytes, valid only until the next line is read (they may share the read buffer):
   * hash them there and then. Empty for a line over the bound.
   */
  readonly bytes: Buffer;
  /** The line is longer than the bound given to {@link fileLines}: it was skipped, not read. */
  readonly tooLong?: true;
}

const NO_BYTES = Buffer.alloc(0);

/**
 * The lines of the open file `fd`, read in chunks: the file is never in memory as a whole, only
 * the line being read. A last line without a `\n` is a line too. A line over `maxLineBytes` is
 * never held: its bytes are skipped as they are read and it comes out `tooLong`, with its number,
 * offset and length (a 2 GB line was read whole, then failed to become a string).
 */
export function* fileLines(fd: number, maxLineBytes: number = MAX_TASK_LINE_BYTES): Generator<FileLine> {
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let carry: Buffer[] = [];
  /** Bytes of the current line read before the current chunk (kept in `carry` up to the bound). */
  let carried = 0;
  let position = 0;
  let lineStart = 0;
  let number = 0;
  const lineOf = (piece: Buffer): FileLine => {
    const length = carried + piece.length;
    number += 1;
    const offset = lineStart;
    let line: FileLine;
    if (length > maxLineBytes) line = { number, offset, length, text: '', bytes: NO_BYTES, tooLong: true };
    else {
      const bytes = carry.length === 0 ? piece : Buffer.concat([...carry, piece]);
      line = { number, offset, length, text: bytes.toString('utf8'), bytes };
    }
    carry = [];
    carried = 0;
    lineStart += length + 1;
    return line;
  };
  for (;;) {
    const read = readSync(fd, chunk, 0, CHUNK_BYTES, position);
    if (read === 0) break;
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(0x0a, start);
      if (end < 0 || end >= read) break;
      yield lineOf(chunk.subarray(start, end));
      start = end + 1;
    }
    if (start < read) {
      carried += read - start;
      if (carried <= maxLineBytes) carry.push(Buffer.from(chunk.subarray(start, read)));
      else carry = [];
    }
    position += read;
  }
  if (carried > 0) yield lineOf(NO_BYTES);
}

/**
 * A short digest of a tasks row's bytes (SHA-256, 128 bits, base64url): recorded in the plan per
 * row, so a row edited after the plan was read is told apart even when its length is unchanged.
 */
export function rowHash(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('base64url').slice(0, 22);
}

/** A tasks line's text without a byte order mark and a `\r` line end. */
export function lineContent(text: string): string {
  // A byte order mark (a file saved "UTF-8 with BOM" by Excel, Notepad or PowerShell, or one of
  // several such files concatenated) is no part of the JSON; JSON.parse refuses it.
  return text.replace(/^\uFEFF/, '').replace(/\r$/, '');
}

/** Context sections from a string or a list of strings; undefined when it is neither. */
export function contextOf(value: unknown): string[] | undefined {
  if (value === undefined) return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return [...value];
  return undefined;
}

/**
 * The inputs of a row whose line was checked when the plan was loaded; undefined when `text` is no
 * such row any more (the file changed since).
 */
export function rowInputs(text: string): RunInputs | undefined {
  let value: unknown;
  try {
    value = JSON.parse(lineContent(text));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { task, context, metadata, expected } = value as Record<string, unknown>;
  const sections = contextOf(context);
  if (typeof task !== 'string' || sections === undefined) return undefined;
  if (
    metadata !== undefined &&
    (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
  )
    return undefined;
  return {
    task,
    context: sections,
    metadata: (metadata as Record<string, unknown> | undefined) ?? {},
    ...(expected === undefined ? {} : { expected }),
  };
}

/**
 * Reads the row at `ref` of `file`. Throws SystemError `run_dir_io` when it cannot be read or is
 * no row, and UserError `tasks_changed` when it is a row but not the one `ref.hash` records (the
 * file was edited, even to a row of the same length).
 */
export function readRow(file: string, ref: RowRef): RunInputs {
  return checkedRow(file, ref, readRowBytes(file, ref));
}

/** True when `bytes` are the whole row `ref` and, if it records a hash, have that hash. */
function sameRow(ref: RowRef, bytes: Buffer): boolean {
  return bytes.length === ref.length && (ref.hash === undefined || rowHash(bytes) === ref.hash);
}

/** The bytes of the line at `ref` of `file`. Throws SystemError `run_dir_io` when it cannot be read. */
function readRowBytes(file: string, ref: RowRef): Buffer {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    return rowBytesAt(fd, ref);
  } catch (error) {
    throw rowReadError(file, ref, error);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The bytes of the line at `ref` of the open file `fd` (fewer at the end of the file). */
function rowBytesAt(fd: number, ref: RowRef): Buffer {
  const bytes = Buffer.allocUnsafe(ref.length);
  const read = readSync(fd, bytes, 0, ref.length, ref.offset);
  return bytes.subarray(0, read);
}

function rowReadError(file: string, ref: RowRef, error: unknown): SystemError {
  return new SystemError(
    'run_dir_io',
    `Could not read the row at byte ${ref.offset} of ${file}: ${ioErrorText(error)}`,
    { path: file },
    { cause: error },
  );
}

/** The bytes `ref` records as a row, checked as {@link readRow} checks them. */
function checkedRow(file: string, ref: RowRef, bytes: Buffer): RunInputs {
  const text = bytes.toString('utf8');
  const inputs = rowInputs(text);
  if (inputs === undefined)
    throw new SystemError(
      'run_dir_io',
      `Expected a tasks row at byte ${ref.offset} (${ref.length} bytes) of ${file}, found ${JSON.stringify(text.slice(0, 60))}`,
      { path: file },
    );
  if (!sameRow(ref, bytes))
    throw new UserError(
      'tasks_changed',
      `Expected the row at byte ${ref.offset} (${ref.length} bytes) of ${file} to be the one the plan recorded, but the file was edited since`,
      { file },
    );
  return inputs;
}

/** Where a run's rows are read (`plan.json` `taskRows`). */
export interface TaskRows {
  /** The tasks file the rows were read from (absolute): a record; editing it changes nothing. */
  readonly from: string;
  /**
   * The file the entries' `row`s point into: `tasks.jsonl` (relative: the run directory's copy),
   * or, until the run directory is created, the absolute path of the file to copy them from.
   */
  readonly file: string;
  /**
   * Set by `troupe score --plan` to that plan file: the entries' own `expected` values (none for an
   * entry that matched no item) replace their rows'.
   */
  readonly expectedFrom?: string;
}

/** What reads a run's inputs needs of its plan. */
export interface RowsOfPlan {
  readonly taskRows?: TaskRows;
}

/**
 * The inputs of plan entry `run` of a plan whose run directory is `root`: the entry's own for an
 * inline entry, else its row, read now.
 */
export function inputsOf(plan: RowsOfPlan, root: string, run: PlanRun): RunInputs {
  if (run.row === undefined) return run;
  const rows = plan.taskRows;
  if (rows === undefined)
    throw new SystemError('run_dir_io', `Expected plan.json in ${root} to say where its task rows are`, {
      path: join(root, 'plan.json'),
    });
  const inputs = readRow(isAbsolute(rows.file) ? rows.file : join(root, rows.file), run.row);
  if (rows.expectedFrom === undefined) return inputs;
  const { expected: _row, ...rest } = inputs;
  return run.expected === undefined ? rest : { ...rest, expected: run.expected };
}

/**
 * Reads the inputs of a run directory's plan entries as {@link inputsOf} does, every row through
 * one descriptor of its tasks file, opened at the first row read and held until `close`: a report
 * of 100,000 entries opened, read and closed the file once for each. `close` may be called more
 * than once; a row read after it opens the file again.
 */
export interface RowReader {
  /** {@link inputsOf} of `run`; throws as it does. */
  inputsOf(run: PlanRun): RunInputs;
  close(): void;
}

/** A {@link RowReader} of the plan of the run directory `root`. */
export function rowReader(plan: RowsOfPlan, root: string): RowReader {
  let fd: number | undefined;
  const rows = plan.taskRows;
  const file = rows === undefined ? undefined : isAbsolute(rows.file) ? rows.file : join(root, rows.file);
  return {
    inputsOf(run) {
      if (run.row === undefined || rows === undefined || file === undefined) return inputsOf(plan, root, run);
      let bytes: Buffer;
      try {
        fd ??= openSync(file, 'r');
        bytes = rowBytesAt(fd, run.row);
      } catch (error) {
        throw rowReadError(file, run.row, error);
      }
      const inputs = checkedRow(file, run.row, bytes);
      if (rows.expectedFrom === undefined) return inputs;
      const { expected: _row, ...rest } = inputs;
      return run.expected === undefined ? rest : { ...rest, expected: run.expected };
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

/** The inputs of run `run` of a loaded plan (its rows are read from the plan's tasks file). */
export function planInputsOf(plan: Pick<Plan, 'tasks' | 'file'>, run: PlanRun): RunInputs {
  if (run.row === undefined) return run;
  if (plan.tasks === undefined) throw new Error(`unreachable: a row of ${plan.file} without its tasks file`);
  const bytes = readRowBytes(plan.tasks, run.row);
  const inputs = sameRow(run.row, bytes) ? rowInputs(bytes.toString('utf8')) : undefined;
  if (inputs === undefined)
    throw new UserError(
      'tasks_changed',
      `Expected ${plan.tasks} to hold the row of line ${run.source.line} it held when the plan was read, but the file changed; run the command again`,
      { file: plan.tasks, line: run.source.line },
    );
  return inputs;
}

/**
 * Writes the rows of `runs` (read from `source`, where their `row`s point) to `root`/tasks.jsonl,
 * masked, one a line in plan order, and returns the runs with `row`s pointing into the copy.
 * Inline runs are returned as they are. Throws UserError `tasks_changed` when a row is no longer
 * what the plan read (the file was edited in between) and SystemError `run_dir_io` when the copy
 * cannot be written.
 */
export function copyTaskRows<R extends PlanRun>(source: string, root: string, runs: readonly R[]): R[] {
  const target = join(root, TASK_ROWS_FILE);
  const copied: R[] = [];
  let input: number | undefined;
  let output: number | undefined;
  let pending: string[] = [];
  let pendingBytes = 0;
  let offset = 0;
  const flush = (): void => {
    if (pending.length === 0 || output === undefined) return;
    writeSync(output, pending.join(''));
    pending = [];
    pendingBytes = 0;
  };
  try {
    output = openSync(target, 'w');
    for (const run of runs) {
      if (run.row === undefined) {
        copied.push(run);
        continue;
      }
      input ??= openSync(source, 'r');
      const bytes = Buffer.allocUnsafe(run.row.length);
      const read = readSync(input, bytes, 0, run.row.length, run.row.offset);
      const inputs =
        read === run.row.length && sameRow(run.row, bytes) ? rowInputs(bytes.toString('utf8')) : undefined;
      if (inputs === undefined)
        throw new UserError(
          'tasks_changed',
          `Expected ${source} to hold the row of line ${run.source.line} it held when the plan was read, but the file changed; run the command again`,
          { file: source, line: run.source.line },
        );
      const text = JSON.stringify(redactValue(inputs));
      const line = Buffer.from(text);
      const length = line.length;
      pending.push(`${text}\n`);
      pendingBytes += length + 1;
      copied.push({ ...run, row: { offset, length, hash: rowHash(line) } });
      offset += length + 1;
      if (pendingBytes >= WRITE_BYTES) flush();
    }
    flush();
  } catch (error) {
    if (error instanceof UserError) throw error;
    throw new SystemError(
      'run_dir_io',
      `Could not write ${target}: ${ioErrorText(error)}`,
      { path: target },
      { cause: error },
    );
  } finally {
    if (input !== undefined) closeSync(input);
    if (output !== undefined) closeSync(output);
  }
  return copied;
}
