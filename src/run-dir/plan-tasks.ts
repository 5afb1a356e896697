/**
 * The tasks file of a benchmark-harness plan: JSONL, one `{task, context?, metadata?, id?, expected?, modelSettings?}` object
 * per line, blank lines skipped, `\n` or `\r\n` line ends, a byte order mark ignored. Problems carry
 * the tasks file's own line numbers.
 */
import { suggestion } from '../definition/fields.ts';
import { memberPath } from '../member-path.ts';
import { readModelSettings } from '../providers/model-settings.ts';
import { TASK_LINE_KEYS } from './constants.ts';
import { expected, type PlanProblems } from './plan-problems.ts';
import type { PlanRun } from './plan-types.ts';

/** A task line before it gets its agent and index. */
export type TaskLine = Omit<PlanRun, 'agent' | 'index'>;

/** Parses tasks JSONL `text` read from `file`; problems go to `problems`. */
export function parseTasksJsonl(text: string, file: string, problems: PlanProblems): TaskLine[] {
  const tasks: TaskLine[] = [];
  const lines = text.split('\n');
  let first = true;
  for (const [offset, raw] of lines.entries()) {
    const line = offset + 1;
    // A byte order mark (a file saved "UTF-8 with BOM" by Excel, Notepad or PowerShell, or one of
    // several such files concatenated) is no part of the JSON; JSON.parse refuses it.
    const content = raw.replace(/^\uFEFF/, '').replace(/\r$/, '');
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
    const { task, context, metadata, id, expected: expectedValue } = entry;
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
      task,
      context: sections,
      metadata: (metadata as Record<string, unknown> | undefined) ?? {},
      ...(id === undefined ? {} : { label: String(id) }),
      ...(expectedValue === undefined ? {} : { expected: expectedValue }),
      ...(settings === undefined ? {} : { modelSettings: settings.settings }),
      source: { file, line, column: 1 },
    });
  }
  return tasks;
}

/** Context sections from a string or a list of strings; undefined when it is neither. */
export function contextOf(value: unknown): string[] | undefined {
  if (value === undefined) return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return [...value];
  return undefined;
}

/** 1-based column of `"key"` in a JSON line (the line start when the key is not there). */
function columnOf(line: string, key: string | undefined): number {
  if (key === undefined) return 1;
  const index = line.indexOf(JSON.stringify(key));
  return index < 0 ? 1 : index + 1;
}
