/**
 * Validation of scorer declarations: the `scorers` list of a plan, or the list a program passes.
 * Every problem is reported (with the path of the offending value) rather than the first; the plan
 * loader turns paths into `file:line:column`, programs get a UserError `invalid_scorers`.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { describeValue, UserError } from '../errors.ts';
import { memberPath } from '../member-path.ts';
import { compileSchema, isSchema } from '../tools/schema.ts';
import { jsonPathProblem } from './json-path.ts';
import { safePatternProblem } from './safe-regex.ts';
import type { ScorerSpec, ScorerType } from './types.ts';

/** One step into a declaration: a key or a list index. */
export type SpecPathSegment = string | number;

/** Reports one problem; `at` says whether the key itself or its value is wrong. */
export type SpecProblemReporter = (
  path: readonly SpecPathSegment[],
  message: string,
  at: 'key' | 'value',
) => void;

/** A judge's agent name and where it is written, for the caller to check against available agents. */
export interface JudgeAgentRef {
  readonly name: string;
  readonly path: readonly SpecPathSegment[];
}

/** What {@link checkScorerSpecs} found. */
export interface CheckedScorers {
  readonly scorers: ScorerSpec[];
  readonly judgeAgents: JudgeAgentRef[];
}

/** The scorer types, in the order the docs list them. */
export const SCORER_TYPES: readonly ScorerType[] = [
  'exact',
  'jsonPath',
  'regex',
  'schema',
  'numeric',
  'contains',
  'judge',
  'module',
];

const COMMON_KEYS = ['name', 'type', 'path', 'expectedPath'] as const;

/** Keys each scorer type accepts besides `name`, `type`, `path` and `expectedPath`. */
export const SCORER_KEYS: Readonly<Record<ScorerType, readonly string[]>> = {
  exact: ['value', 'ignoreCase', 'trim'],
  jsonPath: ['equals'],
  regex: ['pattern', 'flags'],
  schema: ['schema'],
  numeric: ['value', 'tolerance', 'relativeTolerance'],
  contains: ['value', 'ignoreCase'],
  judge: ['agent', 'rubric', 'threshold', 'model', 'maxSteps'],
  module: ['module', 'export', 'threshold'],
};

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Checks a list of scorer declarations. Each entry is a mapping with `type` (and the type's own
 * keys), or just the type's name (`- exact`). Relative `module` paths are resolved against
 * `baseDir`. Problems go to `report`; only valid declarations are returned.
 */
export function checkScorerSpecs(
  value: unknown,
  report: SpecProblemReporter,
  baseDir: string = process.cwd(),
): CheckedScorers {
  const scorers: ScorerSpec[] = [];
  const judgeAgents: JudgeAgentRef[] = [];
  if (!Array.isArray(value)) {
    report([], expected('a list of scorers', value), 'value');
    return { scorers, judgeAgents };
  }
  const names = new Set<string>();
  value.forEach((entry: unknown, index) => {
    const checked = checkOne(typeof entry === 'string' ? { type: entry } : entry, [index], report, baseDir);
    if (checked === undefined) return;
    if (names.has(checked.name)) {
      report(
        typeof entry === 'string' ? [index] : [index, 'name'],
        `expected a scorer name not used before in this list, got ${describeValue(checked.name)} again (give one of them a \`name\`)`,
        'value',
      );
      return;
    }
    names.add(checked.name);
    scorers.push(checked);
    if (checked.type === 'judge') judgeAgents.push({ name: checked.agent, path: [index, 'agent'] });
  });
  return { scorers, judgeAgents };
}

/**
 * Validates scorer declarations given by a program. Throws UserError `invalid_scorers` with every
 * problem in `fields.problems` (`{ path, message }`, path like `[1].pattern`).
 */
export function prepareScorers(value: unknown, baseDir: string = process.cwd()): ScorerSpec[] {
  const problems: { path: string; message: string }[] = [];
  const { scorers } = checkScorerSpecs(
    value,
    (path, message) => problems.push({ path: memberPath(path), message }),
    baseDir,
  );
  if (problems.length > 0) {
    const lines = problems.map((problem) => `${problem.path || '(scorers)'}: ${problem.message}`);
    throw new UserError(
      'invalid_scorers',
      `Expected valid scorers, found ${problems.length} problem(s):\n${lines.join('\n')}`,
      { problems },
    );
  }
  return scorers;
}

function checkOne(
  entry: unknown,
  at: readonly SpecPathSegment[],
  report: SpecProblemReporter,
  baseDir: string,
): ScorerSpec | undefined {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    report(at, expected(`a scorer: a mapping with \`type\` (${SCORER_TYPES.join(', ')})`, entry), 'value');
    return undefined;
  }
  const spec = entry as Record<string, unknown>;
  const type = spec.type;
  if (typeof type !== 'string' || !(SCORER_TYPES as readonly string[]).includes(type)) {
    report([...at, 'type'], expected(`one of ${SCORER_TYPES.join(', ')}`, type), 'value');
    return undefined;
  }
  const scorerType = type as ScorerType;
  const allowed = [...COMMON_KEYS, ...SCORER_KEYS[scorerType]];
  let ok = true;
  const fail = (key: string, message: string): void => {
    ok = false;
    report([...at, key], message, 'value');
  };
  for (const key of Object.keys(spec)) {
    if (!allowed.includes(key)) {
      ok = false;
      report(
        [...at, key],
        expected(`one of the keys of a \`${type}\` scorer (${allowed.join(', ')})`, key),
        'key',
      );
    }
  }
  const name = spec.name ?? type;
  if (typeof name !== 'string' || !NAME.test(name))
    fail('name', expected('a name of letters, digits, `_`, `.` or `-` (at most 64)', spec.name));
  for (const key of ['path', 'expectedPath'] as const) {
    if (spec[key] === undefined) continue;
    const problem = jsonPathProblem(spec[key]);
    if (problem !== undefined) fail(key, problem);
  }
  const optionalBoolean = (key: string): void => {
    if (spec[key] !== undefined && typeof spec[key] !== 'boolean')
      fail(key, expected('`true` or `false`', spec[key]));
  };
  const nonNegative = (key: string): void => {
    const item = spec[key];
    if (item !== undefined && (typeof item !== 'number' || !Number.isFinite(item) || item < 0))
      fail(key, expected('a number ≥ 0', item));
  };
  const threshold = (): void => {
    const item = spec.threshold;
    if (item !== undefined && (typeof item !== 'number' || !(item >= 0 && item <= 1)))
      fail('threshold', expected('a number from 0 to 1', item));
  };
  switch (scorerType) {
    case 'exact':
      optionalBoolean('ignoreCase');
      optionalBoolean('trim');
      break;
    case 'jsonPath':
      if (spec.path === undefined)
        fail('path', expected('a JSONPath into the output, such as `$.verdict`', undefined));
      break;
    case 'regex': {
      const flagsProblem = safePatternProblem('x', spec.flags ?? '');
      if (flagsProblem !== undefined) fail('flags', flagsProblem);
      else if (spec.pattern !== undefined) {
        const problem = safePatternProblem(spec.pattern, spec.flags ?? '');
        if (problem !== undefined) fail('pattern', problem);
      }
      break;
    }
    case 'schema':
      if (spec.schema !== undefined) {
        if (!isSchema(spec.schema)) {
          fail('schema', expected('a JSON Schema (a mapping, or true or false)', spec.schema));
        } else {
          try {
            compileSchema(spec.schema, 'the scorer');
          } catch (error) {
            fail('schema', error instanceof Error ? error.message : String(error));
          }
        }
      }
      break;
    case 'numeric':
      if (spec.value !== undefined && (typeof spec.value !== 'number' || !Number.isFinite(spec.value)))
        fail('value', expected('a number', spec.value));
      nonNegative('tolerance');
      nonNegative('relativeTolerance');
      break;
    case 'contains': {
      const item = spec.value;
      const strings = typeof item === 'string' ? [item] : item;
      if (
        item !== undefined &&
        (!Array.isArray(strings) ||
          strings.length === 0 ||
          !strings.every((s) => typeof s === 'string' && s !== ''))
      )
        fail('value', expected('a non-empty string or a non-empty list of them', item));
      optionalBoolean('ignoreCase');
      break;
    }
    case 'judge': {
      if (typeof spec.agent !== 'string' || spec.agent.trim() === '')
        fail('agent', expected('the name of the agent that grades', spec.agent));
      if (spec.rubric !== undefined && typeof spec.rubric !== 'string')
        fail('rubric', expected('a string', spec.rubric));
      if (spec.model !== undefined && (typeof spec.model !== 'string' || spec.model.trim() === ''))
        fail('model', expected('a model name', spec.model));
      threshold();
      const steps = spec.maxSteps;
      if (steps !== undefined && (typeof steps !== 'number' || !Number.isInteger(steps) || steps < 1))
        fail('maxSteps', expected('a positive integer', steps));
      break;
    }
    case 'module': {
      if (typeof spec.module !== 'string' || spec.module.trim() === '') {
        fail('module', expected('the path of a module exporting a scorer function', spec.module));
      } else if (!existsSync(resolve(baseDir, spec.module))) {
        fail('module', expected(`an existing module file (${resolve(baseDir, spec.module)})`, spec.module));
      }
      if (spec.export !== undefined && (typeof spec.export !== 'string' || spec.export === ''))
        fail('export', expected('an export name', spec.export));
      threshold();
      break;
    }
  }
  if (!ok) return undefined;
  const cleaned: Record<string, unknown> = { name };
  for (const key of allowed) if (key !== 'name' && spec[key] !== undefined) cleaned[key] = spec[key];
  if (scorerType === 'module' && typeof spec.module === 'string' && !isAbsolute(spec.module))
    cleaned.module = resolve(baseDir, spec.module);
  return cleaned as unknown as ScorerSpec;
}

function expected(what: string, value: unknown): string {
  return `expected ${what}, got ${value === undefined ? 'nothing' : describeValue(value)}`;
}
