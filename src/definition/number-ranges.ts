/**
 * The range of every number an agent definition holds: one table for a definition read from a
 * file (validate.ts, through `readNumber`, an `invalid_field` problem at the value's line) and
 * one built in code (`checkDefinitionNumbers` when its run starts, UserError `invalid_definition`),
 * so both refuse the same values in the same words.
 */
import {
  MAX_BASH_OUTPUT_BYTE_LIMIT,
  MAX_BASH_TIMEOUT_SECS,
  MAX_DEFINITION_RETRIES,
  MAX_TIMER_MS,
} from '../constants.ts';
import { describeValue, UserError } from '../errors.ts';
import { memberPath } from '../member-path.ts';
import type { AgentDefinition, RetryPolicy } from './types.ts';

/** What a number must be: an integer or any finite number, from `min` up to `max` (inclusive). */
export interface NumberRange {
  readonly integer: boolean;
  readonly min: number;
  readonly max?: number;
  /** How messages say the range, when the usual words would not say it well. */
  readonly expected?: string;
}

/** `bash.timeoutSecs`: more than 0, at most the longest timer delay. */
export const BASH_TIMEOUT_SECS_RANGE: NumberRange = {
  integer: false,
  min: Number.MIN_VALUE,
  max: MAX_BASH_TIMEOUT_SECS,
};
/** `bash.outputByteLimit`. */
export const BASH_OUTPUT_BYTE_LIMIT_RANGE: NumberRange = {
  integer: true,
  min: 1,
  max: MAX_BASH_OUTPUT_BYTE_LIMIT,
};
/** The keys of a retry policy (`completionRequirement.recovery`, `toolConfig.<tool>.retry`). */
export const RETRY_RANGES: Readonly<Record<keyof RetryPolicy, NumberRange>> = {
  maxRetries: { integer: true, min: 0, max: MAX_DEFINITION_RETRIES },
  baseDelayMs: { integer: false, min: 0, max: MAX_TIMER_MS },
  maxDelayMs: { integer: false, min: 0, max: MAX_TIMER_MS },
};
/** `toolConfig.<tool>.timeoutMs`. */
export const TOOL_TIMEOUT_MS_RANGE: NumberRange = {
  integer: true,
  min: 0,
  max: MAX_TIMER_MS,
  expected: `an integer from 0 (no limit) to ${MAX_TIMER_MS} (milliseconds)`,
};
/**
 * `maxSteps` (and `maxTurns`): no upper bound here, since runs stop at `HARD_MAX_STEPS` whatever it
 * says (a file above it gets a warning).
 */
export const MAX_STEPS_RANGE: NumberRange = { integer: true, min: 1 };

export function inRange(value: unknown, range: NumberRange): value is number {
  return (
    typeof value === 'number' &&
    Number.isFinite(value) &&
    value >= range.min &&
    (range.max === undefined || value <= range.max) &&
    (!range.integer || Number.isInteger(value))
  );
}

/** `a positive integer up to 2000000`: what a value of `range` must be, as messages say it. */
export function expectedNumber(range: NumberRange): string {
  if (range.expected !== undefined) return range.expected;
  const noun = range.integer ? 'integer' : 'number';
  const base =
    range.min === 1 || range.min === Number.MIN_VALUE
      ? `a positive ${noun}`
      : range.min === 0
        ? `a non-negative ${noun}`
        : `a ${noun} >= ${range.min}`;
  return range.max === undefined ? base : `${base} up to ${range.max}`;
}

/** The numbers {@link checkDefinitionNumbers} reads; each part may be missing. */
export type DefinitionNumbers = Partial<
  Pick<AgentDefinition, 'name' | 'bash' | 'completionRequirement' | 'toolConfig' | 'maxSteps'>
>;

/**
 * Checks the numbers of a definition built in code (a file's were checked when it was read)
 * against the ranges a file's must be in. Throws UserError `invalid_definition` naming the agent,
 * the field (`bash.outputByteLimit`), the value and the range (`min`, `max`) of the first one out
 * of range: past them a limit crashed the thread (`outputByteLimit: 1e12`), fired at once (a delay
 * past the longest timer) or never stopped the loop (`maxSteps: NaN`). `part: 'toolbox'` checks
 * only what a toolbox reads (`bash`, `toolConfig`).
 */
export function checkDefinitionNumbers(definition: DefinitionNumbers, part: 'run' | 'toolbox' = 'run'): void {
  const check = (path: readonly (string | number)[], value: unknown, range: NumberRange): void => {
    if (inRange(value, range)) return;
    const field = memberPath(path);
    const agent = typeof definition.name === 'string' ? definition.name : undefined;
    const of = agent === undefined ? '' : ` of agent \`${agent}\``;
    throw new UserError(
      'invalid_definition',
      `Expected \`${field}\`${of} to be ${expectedNumber(range)}, got ${describeValue(value)}`,
      {
        ...(agent === undefined ? {} : { name: agent }),
        field,
        value: typeof value === 'number' ? value : describeValue(value),
        min: range.min,
        ...(range.max === undefined ? {} : { max: range.max }),
      },
    );
  };
  const retry = (path: readonly (string | number)[], policy: unknown): void => {
    if (policy === undefined) return;
    const object = (typeof policy === 'object' && policy !== null ? policy : {}) as Record<string, unknown>;
    for (const key of Object.keys(RETRY_RANGES) as (keyof RetryPolicy)[])
      check([...path, key], object[key], RETRY_RANGES[key]);
  };
  if (part === 'run') check(['maxSteps'], definition.maxSteps, MAX_STEPS_RANGE);
  const bash: unknown = definition.bash;
  if (bash !== undefined) {
    const object = (typeof bash === 'object' && bash !== null ? bash : {}) as Record<string, unknown>;
    check(['bash', 'timeoutSecs'], object.timeoutSecs, BASH_TIMEOUT_SECS_RANGE);
    check(['bash', 'outputByteLimit'], object.outputByteLimit, BASH_OUTPUT_BYTE_LIMIT_RANGE);
  }
  const completion: unknown = definition.completionRequirement;
  if (typeof completion === 'object' && completion !== null)
    retry(['completionRequirement', 'recovery'], (completion as { recovery?: unknown }).recovery);
  const toolConfig: unknown = definition.toolConfig;
  if (typeof toolConfig !== 'object' || toolConfig === null) return;
  for (const [tool, config] of Object.entries(toolConfig)) {
    if (typeof config !== 'object' || config === null) continue;
    const { retry: policy, timeoutMs } = config as { retry?: unknown; timeoutMs?: unknown };
    if (timeoutMs !== undefined) check(['toolConfig', tool, 'timeoutMs'], timeoutMs, TOOL_TIMEOUT_MS_RANGE);
    retry(['toolConfig', tool, 'retry'], policy);
  }
}
