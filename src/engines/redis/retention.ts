/**
 * How long what an ended agent leaves in Redis is kept (`retainSeconds`): BullMQ's removal options
 * of its job. With `retainSeconds: 0` the job must outlive the script that finishes it: BullMQ's
 * `removeOnComplete: { age: 0 }` deletes the job in that script, before the supervisor has read the
 * outcome, and the agent ended `job_lost`. So a job is kept until the supervisor has read it and
 * removes it (redis-engine.ts), and one it never reads (it stopped first) expires
 * UNREAD_JOB_TTL_MS after it ended (worker.ts).
 */
import { UNREAD_JOB_TTL_MS } from './constants.ts';

/** BullMQ's `removeOnComplete` / `removeOnFail` of an agent job for `retainSeconds`. */
export function jobRemoval(retainSeconds: number | undefined): {
  readonly removeOnComplete: false | { readonly age: number };
  readonly removeOnFail: false | { readonly age: number };
} {
  const keep = retainSeconds === undefined || retainSeconds === 0 ? false : { age: retainSeconds };
  return { removeOnComplete: keep, removeOnFail: keep };
}

/**
 * The TTL (ms) a finished job's hash gets on the worker, or undefined for none: `retainSeconds`,
 * or with 0, UNREAD_JOB_TTL_MS (its supervisor removes it once read). `final`: the job ended for
 * good (completed, or failed with no attempt left); a failed job with retain > 0 is left to BullMQ.
 */
export function finishedJobTtlMs(
  retainSeconds: unknown,
  status: 'completed' | 'failed',
  final: boolean,
): number | undefined {
  if (typeof retainSeconds !== 'number' || !(retainSeconds >= 0) || !final) return undefined;
  if (retainSeconds === 0) return UNREAD_JOB_TTL_MS;
  return status === 'completed' ? Math.round(retainSeconds * 1000) : undefined;
}

/**
 * How long a batch's hash (its agents' outcomes, unmasked) is kept once the batch ends, in ms, or
 * undefined for ever: `retainSeconds`, or with 0, UNREAD_JOB_TTL_MS. With 0 its supervisor deletes
 * it once it has read every agent's outcome (redis-engine.ts): deleted as the batch ended, an agent
 * whose best-effort `ended` signal was lost found nothing and ended `job_lost`.
 */
export function batchHashTtlMs(retainSeconds: number | undefined): number | undefined {
  if (retainSeconds === undefined) return undefined;
  return retainSeconds === 0 ? UNREAD_JOB_TTL_MS : Math.round(retainSeconds * 1000);
}

/**
 * BullMQ's removal options of a batch job. With `retainSeconds: 0` it is kept (a job BullMQ's own
 * script fails, at its stalled limit, must outlive that script: its failed reason is what its
 * unfinished agents end with) until its supervisor has read every agent and removes it, or by age
 * UNREAD_JOB_TTL_MS when the supervisor never does.
 */
export function batchJobRemoval(retainSeconds: number | undefined): {
  readonly removeOnComplete: false | { readonly age: number };
  readonly removeOnFail: false | { readonly age: number };
} {
  if (retainSeconds === undefined) return { removeOnComplete: false, removeOnFail: false };
  const age = retainSeconds === 0 ? UNREAD_JOB_TTL_MS / 1000 : retainSeconds;
  return { removeOnComplete: { age }, removeOnFail: { age } };
}
