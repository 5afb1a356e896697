/** Positions of values and keys in a parsed YAML document, for plan problems. */

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Document, isMap, isNode, isScalar, type LineCounter } from 'yaml';
import { readYaml, unclosedLocator } from '../definition/yaml-read.ts';
import { UserError } from '../errors.ts';
import { memberPath } from '../member-path.ts';
import { ioErrorText } from './io-error-text.ts';
import { type FilePosition, PLAN_FILE, PlanProblems, type ProblemFileKind } from './plan-problems.ts';

/** One step of a path into the document: a key or a list index. */
export type Segment = string | number;

const START: FilePosition = { line: 1, column: 1 };

/** A problem that stops a YAML file from being read. */
export interface YamlFailure {
  readonly position: FilePosition;
  readonly message: string;
}

/** A parsed YAML file that can say where each of its values is. */
export class YamlSource {
  readonly doc: Document;
  readonly #lines: LineCounter;
  readonly #value: unknown;

  private constructor(doc: Document, lines: LineCounter, value: unknown) {
    this.doc = doc;
    this.#lines = lines;
    this.#value = value;
  }

  /**
   * Parses `text`, or says why it cannot be read: syntax errors, an alias bomb (more than
   * MAX_YAML_ALIAS_COUNT expansions), nesting too deep. Never throws.
   */
  static parse(text: string): YamlSource | { readonly failures: readonly YamlFailure[] } {
    const read = readYaml(text, 'plan');
    const at = (offset: number): FilePosition => {
      const { line, col } = read.lineCounter.linePos(offset);
      return { line, column: col };
    };
    if (read.ok) return new YamlSource(read.doc, read.lineCounter, read.value);
    const errors = read.doc?.errors ?? [];
    if (errors.length > 0) {
      // An unclosed quote or bracket is reported where the next entry or the text begins: the
      // problem points at where it opens.
      const opening = unclosedLocator(text);
      return {
        failures: errors.map((error) => {
          const message = error.message.split('\n', 1)[0] ?? error.message;
          const opened = opening(error);
          return opened !== undefined
            ? {
                position: at(opened),
                message: `${message.replace(/ at line \d+, column \d+:?$/, '')} (it opens here and is never closed)`,
              }
            : { position: at(error.pos[0]), message };
        }),
      };
    }
    const refusal = read.refusal ?? { message: 'Invalid YAML in plan', offset: 0 };
    return { failures: [{ position: at(refusal.offset), message: refusal.message }] };
  }

  /** The value as plain data (aliases resolved). */
  value(): unknown {
    return this.#value;
  }

  /** Where the value at `path` starts; the nearest ancestor that exists when it does not. */
  valueAt(path: readonly Segment[]): FilePosition {
    for (let length = path.length; length >= 0; length -= 1) {
      const node = this.doc.getIn(path.slice(0, length), true);
      if (isNode(node) && node.range) return this.#at(node.range[0]);
    }
    return START;
  }

  /** Where the key `key` of the map at `path` is written; the map itself when it is not there. */
  keyAt(path: readonly Segment[], key: string): FilePosition {
    const node = path.length === 0 ? this.doc.contents : this.doc.getIn(path, true);
    if (isMap(node)) {
      for (const pair of node.items) {
        if (isScalar(pair.key) && pair.key.value === key && pair.key.range)
          return this.#at(pair.key.range[0]);
      }
    }
    return this.valueAt(path);
  }

  #at(offset: number): FilePosition {
    const { line, col } = this.#lines.linePos(offset);
    return { line, column: col };
  }
}

/** `runs[2].task` for `['runs', 2, 'task']` (see {@link memberPath}); `(plan)` for the plan itself. */
export function fieldName(path: readonly Segment[]): string {
  return memberPath(path) || '(plan)';
}

/** A YAML file read by {@link readYamlFile}: its absolute path, its document, and where to add problems. */
export interface ReadYamlFile {
  readonly path: string;
  readonly source: YamlSource;
  readonly problems: PlanProblems;
}

/**
 * Reads and parses the YAML file at `file` (`what` names it in errors: `a plan file`). Throws
 * UserError `notFound` (`plan_not_found` unless given) when it cannot be read and `kind.code`
 * (`invalid_plan` unless given; with file:line:column) when it does not parse.
 */
export function readYamlFile(
  file: string,
  what: string,
  notFound = 'plan_not_found',
  kind: ProblemFileKind = PLAN_FILE,
): ReadYamlFile {
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UserError(notFound, `Expected ${what}, could not read ${path}: ${ioErrorText(error)}`, {
      file: path,
    });
  }
  const problems = new PlanProblems();
  const source = YamlSource.parse(text);
  if (!(source instanceof YamlSource)) {
    for (const { position, message } of source.failures) problems.add(path, position, '(yaml)', message);
    problems.throwIfAny(path, kind);
    throw new UserError(kind.code, `Expected YAML in ${what} at ${path}`, { file: path });
  }
  return { path, source, problems };
}
