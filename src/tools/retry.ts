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
 */
export function backoffDelay(
  policy: RetryPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return timerDelay(Math.round(step / 2 + (random() * step) / 2));
}

/** The default {@link Sleep}: a timer that is cleared when the signal aborts. */
export const sleep: Sleep = abortableSleep;
