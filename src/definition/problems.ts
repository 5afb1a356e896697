/** Building, collecting and printing definition problems. */
import type { DefinitionProblem, ProblemCode, SourcePosition } from './types.ts';

/** One step of a path into the frontmatter: a key or a list index. */
export type PathSegment = string | number;

/** RFC 6901 JSON pointer for `path`: `['completionRequirement', 'tool']` -> `/completionRequirement/tool`. */
export function jsonPointer(path: readonly PathSegment[]): string {
  return path.map((segment) => `/${String(segment).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/** The position used when a problem concerns the whole file. */
export const FILE_START: SourcePosition = { line: 1, column: 1 };

/** Collects the errors and warnings about one file, in the order they are found. */
export class ProblemList {
  readonly #file: string;
  readonly #problems: DefinitionProblem[] = [];

  constructor(file: string) {
    this.#file = file;
  }

  error(code: ProblemCode, message: string, at: SourcePosition, path: readonly PathSegment[] = []): void {
    this.#add('error', code, message, at, path);
  }

  warning(code: ProblemCode, message: string, at: SourcePosition, path: readonly PathSegment[] = []): void {
    this.#add('warning', code, message, at, path);
  }

  /** Adds problems found elsewhere (they keep their own file). */
  addAll(problems: Iterable<DefinitionProblem>): void {
    for (const problem of problems) this.#problems.push(problem);
  }

  get hasErrors(): boolean {
    return this.#problems.some((problem) => problem.severity === 'error');
  }

  get errors(): DefinitionProblem[] {
    return this.#problems.filter((problem) => problem.severity === 'error');
  }

  get warnings(): DefinitionProblem[] {
    return this.#problems.filter((problem) => problem.severity === 'warning');
  }

  #add(
    severity: DefinitionProblem['severity'],
    code: ProblemCode,
    message: string,
    at: SourcePosition,
    path: readonly PathSegment[],
  ): void {
    this.#problems.push({
      severity,
      code,
      message,
      file: this.#file,
      line: at.line,
      column: at.column,
      path: jsonPointer(path),
    });
  }
}

/**
 * One problem as a compiler-style line: `file:line:column: error|warning code: message (path)`.
 * The `(path)` suffix is left out for problems about the whole file (empty pointer).
 * @param file shown instead of `problem.file`, e.g. a path relative to the working directory.
 */
export function formatProblem(problem: DefinitionProblem, file: string = problem.file): string {
  const where = problem.path === '' ? '' : ` (${problem.path})`;
  return `${file}:${problem.line}:${problem.column}: ${problem.severity} ${problem.code}: ${problem.message}${where}`;
}
