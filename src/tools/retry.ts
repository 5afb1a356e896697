/** Exponential backoff with jitter, for `toolConfig.<tool>.retry`. */
import { sleep as abortableSleep } from '../abort.ts';
import type { RetryPolicy } from '../definition/types.ts';
import { timerDelay } from '../option-checks.ts';

/** Waits `ms`, or rejects with `signal.reason` once `signal` aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/**
 * The delay before retry number `attempt` (0 for the first retry): the exponential step
 * `baseDelayMs * 2^attempt` capped at `maxDelayMs`, of which the upper half is jittered so that
 * agents retrying the same resource spread out but never retry immediately. At most the longest
 * timer delay (2147483647 ms): past it Node fires at once, so a policy of `baseDelayMs: 3e9`
 * retried at once, and ended each `wait_for_instruction` attempt (which waits this long) at once.
 * Finite for every `attempt` of a valid policy (delays from 0 to 2147483647, `random` in [0, 1)):
 * a `baseDelayMs` of 0 waits 0 at every one (it was NaN from attempt 1024 on, `0 * 2^1024`).
 */
export function backoffDelay(
  policy: RetryPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const step = exponentialStep(policy, attempt);
  return timerDelay(Math.round(step / 2 + (random() * step) / 2));
}

/**
 * `baseDelayMs * 2^attempt` capped at `maxDelayMs`. From attempt 1024 on, `2^attempt` is Infinity:
 * a base of 0 then gave `0 * Infinity`, NaN, which `Math.min` passed on (a NaN delay fires at
 * once); a base of 0 is 0 at every attempt, and any other NaN (an attempt of NaN) the cap.
 */
function exponentialStep(policy: RetryPolicy, attempt: number): number {
  if (policy.baseDelayMs === 0) return 0;
  const exponential = policy.baseDelayMs * 2 ** attempt;
  return Number.isNaN(exponential) ? policy.maxDelayMs : Math.min(policy.maxDelayMs, exponential);
}

/** The default {@link Sleep}: a timer that is cleared when the signal aborts. */
export const sleep: Sleep = abortableSleep;
