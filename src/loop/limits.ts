/**
 * The limits an agent runs under: the caller's, checked once and filled with the defaults, then
 * recorded in Started so a resumed agent keeps them.
 */
import { DEFAULT_MAX_TOTAL_TOKENS, DEFAULT_TRUNCATION_RETRIES, HARD_MAX_STEPS } from '../constants.ts';
import { describeValue, UserError } from '../errors.ts';
import { timeLimit } from '../option-checks.ts';
import type { ModelPrice } from '../providers/pricing.ts';
import { budget, type StopCondition, stepCount } from './stop-conditions.ts';
import type { AgentLimits } from './types.ts';

/** Every limit, defaults filled in. Budgets of 0 are unlimited. */
export interface ResolvedLimits {
  readonly maxSteps: number;
  readonly maxTotalTokens: number;
  readonly maxCostUsd: number;
  readonly wallClockMs: number;
  readonly truncationRetries: number;
}

/**
 * Checks `limits` and fills the defaults: `maxSteps` from the definition (capped at
 * HARD_MAX_STEPS), `maxTotalTokens` DEFAULT_MAX_TOTAL_TOKENS, the other budgets unlimited.
 * Throws UserError `invalid_option` for a value that is not a number of the right kind, and for a
 * `wallClockMs` past MAX_TIMER_MS.
 */
export function resolveLimits(limits: AgentLimits | undefined, definitionMaxSteps: number): ResolvedLimits {
  const given = limits ?? {};
  const check = (name: keyof AgentLimits, integer: boolean, min: number): number | undefined => {
    const value = given[name];
    if (value === undefined) return undefined;
    if (
      typeof value !== 'number' ||
      !Number.isFinite(value) ||
      value < min ||
      (integer && !Number.isInteger(value))
    ) {
      const kind = integer
        ? min > 0
          ? 'a positive integer'
          : 'a non-negative integer'
        : 'a non-negative number';
      throw new UserError(
        'invalid_option',
        `Expected \`limits.${name}\` to be ${kind}, got ${describeValue(value)}`,
        {
          option: `limits.${name}`,
        },
      );
    }
    return value;
  };
  const maxSteps = check('maxSteps', true, 1) ?? definitionMaxSteps;
  return {
    maxSteps: Math.min(HARD_MAX_STEPS, maxSteps),
    maxTotalTokens: check('maxTotalTokens', true, 0) ?? DEFAULT_MAX_TOTAL_TOKENS,
    maxCostUsd: check('maxCostUsd', false, 0) ?? 0,
    // Past the longest timer delay Node fires the agent's time limit at once.
    wallClockMs: timeLimit('limits.wallClockMs', check('wallClockMs', true, 0), 0),
    truncationRetries: check('truncationRetries', true, 0) ?? DEFAULT_TRUNCATION_RETRIES,
  };
}

/** The built-in stop conditions of `limits`: steps, then tokens, cost and wall clock. */
export function limitConditions(limits: ResolvedLimits): readonly StopCondition[] {
  // Conditions are pure functions of the limits: agents with the same limits share them.
  const key = `${limits.maxSteps}/${limits.maxTotalTokens}/${limits.maxCostUsd}/${limits.wallClockMs}`;
  let conditions = sharedConditions.get(key);
  if (conditions === undefined) {
    conditions = Object.freeze([stepCount(limits.maxSteps), budget({ ...limits })]);
    if (sharedConditions.size >= SHARED_CONDITIONS) sharedConditions.clear();
    sharedConditions.set(key, conditions);
  }
  return conditions;
}

/** Limit conditions by limits (see limitConditions); cleared when full. */
const sharedConditions = new Map<string, readonly StopCondition[]>();
const SHARED_CONDITIONS = 64;

/** Warnings about limits that cannot work as asked, for Started.notices. */
export function limitNotices(limits: ResolvedLimits, model: string, price: ModelPrice | undefined): string[] {
  if (limits.maxCostUsd > 0 && price === undefined) {
    return [
      `The cost budget ($${limits.maxCostUsd}) cannot be enforced: no price is known for model ${model}, so its cost is unknown. The token budget still applies.`,
    ];
  }
  return [];
}
