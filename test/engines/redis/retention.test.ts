/**
 * What a batch leaves in Redis as it ends, by `retainSeconds`. With 0 the worker used to delete a
 * batch's hash (its agents' outcomes) as the batch ended, and BullMQ removed the job with it: an
 * agent whose `ended` signal was lost then found nothing and ended `job_lost`. Both are now kept
 * for a bounded time, until the supervisor has read every agent and removes them.
 *
 * (An end-to-end check of the lost signal raced: closing the supervisor cancels its agents and
 * settles them, and the supervisor then rightly removes the batch when the worker ended it first.)
 */
import { describe, expect, it } from 'vitest';
import { UNREAD_JOB_TTL_MS } from '../../../src/engines/redis/constants.ts';
import { batchHashTtlMs, batchJobRemoval } from '../../../src/engines/redis/retention.ts';

describe('a batch ended with retainSeconds', () => {
  it('0 keeps its hash and job until read, at most UNREAD_JOB_TTL_MS', () => {
    expect(UNREAD_JOB_TTL_MS).toBeGreaterThan(0);
    expect(UNREAD_JOB_TTL_MS).toBeLessThanOrEqual(24 * 3_600_000);
    expect(batchHashTtlMs(0)).toBe(UNREAD_JOB_TTL_MS);
    expect(batchJobRemoval(0)).toEqual({
      removeOnComplete: { age: UNREAD_JOB_TTL_MS / 1000 },
      removeOnFail: { age: UNREAD_JOB_TTL_MS / 1000 },
    });
  });

  it('N keeps them N seconds, and unset for ever', () => {
    expect(batchHashTtlMs(600)).toBe(600_000);
    expect(batchJobRemoval(600)).toEqual({ removeOnComplete: { age: 600 }, removeOnFail: { age: 600 } });
    expect(batchHashTtlMs(undefined)).toBeUndefined();
    expect(batchJobRemoval(undefined)).toEqual({ removeOnComplete: false, removeOnFail: false });
  });
});
