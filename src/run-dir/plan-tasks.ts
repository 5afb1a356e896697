/**
 * The tasks file of a benchmark-harness plan: JSONL, one `{task, context?, metadata?, id?, expected?, modelSettings?}` object
 * per line, blank lines skipped, `\n` or `\r\n` line ends, a byte order mark ignored. Problems carry
 * the tasks file's own line numbers. The file is read a chunk at a time and every line checked,
 * but a row's task, context, metadata and expected value are not kept: the plan holds where the
 * line is, and they are read from there when needed (task-rows.ts).
 */
import { suggestion } from '../definition/fields.ts';
import { memberPath } from '../member-path.ts';
import { readModelSettings } from '../providers/model-settings.ts';
import { MAX_TASK_LINE_BYTES, TASK_LINE_KEYS } from './constants.ts';
import { expected, type PlanProblems } from './plan-problems.ts';
import type { StoredPlanRun } from './plan-types.ts';
import { contextOf, type FileLine, lineContent, rowHash } from './task-rows.ts';

/** A task line before it gets its agent and index. */
export type TaskLine = Omit<StoredPlanRun, 'agent' | 'index'>;

/**
 * Checks the tasks JSONL `lines` read from `file`; problems go to `problems`. A line `fileLines`
 * skipped for being over `maxLineBytes` is a problem naming the bound.
 */
export function parseTasksJsonl(
  lines: Iterable<FileLine>,
  file: string,
  problems: PlanProblems,
  maxLineBytes: number = MAX_TASK_LINE_BYTES,
): TaskLine[] {
  const tasks: TaskLine[] = [];
  let first = true;
  for (const { number: line, offset, length, text, bytes, tooLong } of lines) {
    if (tooLong) {
      problems.add(
        file,
        { line, column: 1 },
        `line ${line}`,
        `expected a line of at most ${maxLineBytes} bytes (raise it with --max-task-line-bytes), got one of ${length} bytes`,
      );
      first = false;
      continue;
    }
    const content = lineContent(text);
    if (content.trim() === '') continue;
    const at = (key?: string) => ({ line, column: columnOf(content, key) });
    let value: unknown;
    try {
      value = JSON.parse(content);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      if (first && !/^\s*[{[]/.test(content)) {
        // Not JSONL at all (a CSV, a JSON array over many lines): one problem, not one per line.
        problems.add(
          file,
          at(),
          `line ${line}`,
          `expected a JSONL tasks file (one JSON object per line, like {"task": "..."}), got ${JSON.stringify(content.length > 60 ? `${content.slice(0, 57)}...` : content)}, which is not JSON (${reason})`,
        );
        return tasks;
      }
      problems.add(file, at(), `line ${line}`, `expected a JSON object, got invalid JSON (${reason})`);
      first = false;
      continue;
    }
    first = false;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.add(file, at(), `line ${line}`, expected('a JSON object', value));
      continue;
    }
    const entry = value as Record<string, unknown>;
    let ok = true;
    for (const key of Object.keys(entry)) {
      if (!(TASK_LINE_KEYS as readonly string[]).includes(key)) {
        problems.add(
          file,
          at(key),
          key,
          `${expected(`one of ${TASK_LINE_KEYS.join(', ')}`, key)}${suggestion(key, TASK_LINE_KEYS)}`,
        );
        ok = false;
      }
    }
    const { task, context, metadata, id } = entry;
    const settings = entry.modelSettings === undefined ? undefined : readModelSettings(entry.modelSettings);
    for (const problem of settings?.problems ?? []) {
      problems.add(
        file,
        at('modelSettings'),
        memberPath(['modelSettings', ...problem.path]),
        problem.message,
      );
      ok = false;
    }
    if (typeof task !== 'string' || task.trim() === '') {
      problems.add(file, at('task'), 'task', expected('a non-empty string', task));
      ok = false;
    }
    const sections = contextOf(context);
    if (sections === undefined) {
      problems.add(file, at('context'), 'context', expected('a string or a list of strings', context));
      ok = false;
    }
    if (
      metadata !== undefined &&
      (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
    ) {
      problems.add(file, at('metadata'), 'metadata', expected('an object', metadata));
      ok = false;
    }
    if (id !== undefined && typeof id !== 'string' && typeof id !== 'number') {
      problems.add(file, at('id'), 'id', expected('a string or a number', id));
      ok = false;
    }
    if (!ok || typeof task !== 'string' || sections === undefined) continue;
    tasks.push({
      ...(id === undefined ? {} : { label: String(id) }),
      ...(settings === undefined ? {} : { modelSettings: settings.settings }),
      source: { file, line, column: 1 },
      row: { offset, length, hash: rowHash(bytes) },
    });
  }
  return tasks;
}

/** 1-based column of `"key"` in a JSON line (the line start when the key is not there). */
function columnOf(line: string, key: string | undefined): number {
  if (key === undefined) return 1;
  const index = line.indexOf(JSON.stringify(key));
  return index < 0 ? 1 : index + 1;
}
