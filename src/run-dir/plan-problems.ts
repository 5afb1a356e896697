/**
 * Problems found in a plan (or its tasks file), collected so every one is reported at once, and
 * printed compiler-style: `plan.yaml:4:11: runs[0].task: expected a non-empty string, got 3 (number)`.
 */
import { relative } from 'node:path';
import { describeValue, UserError } from '../errors.ts';

/** A 1-based position in a file. */
export interface FilePosition {
  readonly line: number;
  readonly column: number;
}

/** One thing wrong with a plan. */
export interface PlanProblem {
  /** Absolute path of the plan or tasks file. */
  readonly file: string;
  readonly line: number;
  readonly column: number;
  /** Where in the plan, e.g. `runs[2].task`, `threads`; for a tasks line, the key on that line. */
  readonly field: string;
  /** "expected X, got Y". */
  readonly message: string;
}

/** What kind of file problems are in: the error code and the words that name a valid one. */
export interface ProblemFileKind {
  readonly code: 'invalid_plan' | 'invalid_permissions';
  /** `a valid plan`. */
  readonly what: string;
}

/** A plan file (`troupe fanout PLAN`, `troupe score`). */
export const PLAN_FILE: ProblemFileKind = { code: 'invalid_plan', what: 'a valid plan' };

/** A permissions file (`--permissions FILE`, Claude Code's `.claude/settings.json`). */
export const PERMISSIONS_FILE: ProblemFileKind = {
  code: 'invalid_permissions',
  what: 'a valid permissions file',
};

/** Collects plan problems in the order they are found. */
export class PlanProblems {
  readonly #problems: PlanProblem[] = [];

  add(file: string, at: FilePosition, field: string, message: string): void {
    this.#problems.push({ file, line: at.line, column: at.column, field, message });
  }

  get list(): readonly PlanProblem[] {
    return this.#problems;
  }

  get count(): number {
    return this.#problems.length;
  }

  /**
   * Throws UserError `kind.code` (`invalid_plan` unless given) listing every problem, with
   * `problems` in its fields, when there is any.
   */
  throwIfAny(planFile: string, kind: ProblemFileKind = PLAN_FILE): void {
    if (this.#problems.length === 0) return;
    this.#problems.sort(
      (a, b) =>
        (a.file === b.file
          ? 0
          : a.file === planFile
            ? -1
            : b.file === planFile
              ? 1
              : a.file < b.file
                ? -1
                : 1) ||
        a.line - b.line ||
        a.column - b.column,
    );
    const lines = this.#problems.map((problem) => formatPlanProblem(problem));
    throw new UserError(
      kind.code,
      `Expected ${kind.what} in ${planFile}, found ${this.#problems.length} problem(s):\n${lines.join('\n')}`,
      { file: planFile, problems: [...this.#problems] },
    );
  }
}

/** "expected `what`, got <value>" with the value described as troupe describes values everywhere. */
export function expected(what: string, value: unknown): string {
  return `expected ${what}, got ${value === undefined ? 'nothing' : describeValue(value)}`;
}

/** `file:line:column: field: message`, with the file relative to `cwd` when it lies inside it. */
export function formatPlanProblem(problem: PlanProblem, cwd?: string): string {
  const file = cwd === undefined ? problem.file : displayPath(problem.file, cwd);
  return `${file}:${problem.line}:${problem.column}: ${problem.field}: ${problem.message}`;
}

/** `path` relative to `cwd` when inside it, else as given. */
export function displayPath(path: string, cwd: string): string {
  const inside = relative(cwd, path);
  return inside === '' || inside.startsWith('..') ? path : inside;
}

/** The problems carried by an `invalid_plan` (or `invalid_permissions`) error, if `error` is one. */
export function planProblemsOf(error: unknown): readonly PlanProblem[] | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, fields } = error as { code?: unknown; fields?: { problems?: unknown } };
  if ((code !== 'invalid_plan' && code !== 'invalid_permissions') || !Array.isArray(fields?.problems))
    return undefined;
  return fields.problems as PlanProblem[];
}
