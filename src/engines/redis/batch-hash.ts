/**
 * Writes to a batch's hash (keys.ts `batch`), each in a script that checks what a plain HSET could
 * not:
 * - From outside the batch's run: a job an agent was handed off to marks it `h` when its own run
 *   ends, long after the batch may have ended. By then the hash may be gone (its supervisor deleted
 *   it once it had read every agent, `retainSeconds: 0`; or it expired): a plain HSET made a new
 *   hash holding only that `h`, which nobody reads.
 * - From the batch's run: only while the worker still holds the batch job's lock
 *   ({@link writeBatchFenced}).
 */
import type { Redis } from 'ioredis';
import { BATCH_READ, HANDED_OFF } from './constants.ts';
import { LuaScript } from './script.ts';

// KEYS: the batch's hash. ARGV: the agent's field, a TTL in ms (0: none). Sets the field only in a
// hash that exists; lengthens a TTL it has (the batch ended) to the given one, never gives one to a
// hash without (its batch still runs: the hash gets its TTL as the batch ends). 1 when written.
const MARK_HANDED_OFF = new LuaScript(
  `if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], '${HANDED_OFF}')
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  local left = redis.call('PTTL', KEYS[1])
  if left > 0 and left < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
end
return 1`,
  1,
);

/**
 * Marks `agentId` handed off (`h`) in the batch's hash `batchKey` if that hash still exists (see
 * the module comment); a hash with a TTL keeps at least `ttlMs` more (0: unchanged). Resolves true
 * when it wrote the field.
 */
export async function markHandedOff(
  redis: Redis,
  batchKey: string,
  agentId: string,
  ttlMs: number,
): Promise<boolean> {
  return (await MARK_HANDED_OFF.run(redis, [batchKey], [agentId, Math.max(0, Math.round(ttlMs))])) === 1;
}

// KEYS: the batch's hash, the batch job's lock. ARGV: this worker's token ('' when it has none: no
// fence), then field, value pairs. Writes only while the lock holds the token; 1 when written. A
// field at a time: unpack() of a long list overflows Lua's C stack.
const FENCED_WRITE = new LuaScript(
  `if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1`,
  2,
);

/**
 * Writes `fields` (agent id -> `h` or a BatchResult's JSON) into the batch's hash `batchKey`, in
 * one script that first checks `fence`: the batch job's lock
 * (`<job>:lock`) still holds this worker's token. A worker that lost the batch (it stalled past the
 * lock duration: SIGSTOP, a blocked event loop) wrote into a hash its supervisor had deleted (made
 * again, kept UNREAD_JOB_TTL_MS) or that the worker now holding the batch writes, whose agents'
 * fields it overwrote, and whose TTL it cut to the batch's retention while that worker ran.
 * Resolves false, writing nothing, when the lock is not this worker's; with no `fence` (a job
 * taken without a token) it writes.
 */
export async function writeBatchFenced(
  redis: Redis,
  batchKey: string,
  fence: { readonly key: string; readonly token: string } | undefined,
  fields: Readonly<Record<string, string>>,
): Promise<boolean> {
  const args: string[] = [fence?.token ?? ''];
  for (const [field, value] of Object.entries(fields)) args.push(field, value);
  return (await FENCED_WRITE.run(redis, [batchKey, fence?.key ?? batchKey], args)) === 1;
}

// KEYS: the batch's hash, the batch job's lock. ARGV: this worker's token ('' : no fence), the
// hash's TTL in ms, '1' when a BATCH_READ field deletes it. 0: not this worker's lock; 1: the TTL
// set; 2: deleted (its supervisor read every agent).
const END_BATCH = new LuaScript(
  `if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if ARGV[3] == '1' and redis.call('HEXISTS', KEYS[1], '${BATCH_READ}') == 1 then
  redis.call('DEL', KEYS[1])
  return 2
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`,
  2,
);

/**
 * What a batch's hash becomes as its batch ends on a worker ({@link endBatchFenced}): `lost` (the
 * lock is not this worker's: nothing done), `kept` (it expires in the TTL given), `removed` (its
 * supervisor had read every agent: deleted, and the job is to go as it completes).
 */
export type BatchEnd = 'lost' | 'kept' | 'removed';

/**
 * Gives the batch's hash `batchKey` its TTL `ttlMs` as the batch ends, fenced as
 * {@link writeBatchFenced}; with `removeIfRead` (`retainSeconds: 0`), deletes it instead when its
 * supervisor marked it BATCH_READ (it had read every agent, and the worker still held the job).
 */
export async function endBatchFenced(
  redis: Redis,
  batchKey: string,
  fence: { readonly key: string; readonly token: string } | undefined,
  ttlMs: number,
  removeIfRead: boolean,
): Promise<BatchEnd> {
  const args = [fence?.token ?? '', Math.max(1, Math.round(ttlMs)), removeIfRead ? '1' : '0'];
  const reply = await END_BATCH.run(redis, [batchKey, fence?.key ?? batchKey], args);
  return reply === 0 ? 'lost' : reply === 2 ? 'removed' : 'kept';
}

// KEYS: the batch job's hash, the batch's hash. ARGV: a TTL in ms. 0: the job is gone, and so is the
// hash now; 1: the hash is marked BATCH_READ, with the TTL. One script: a removal that another call
// made between the two (a later reconcile tick's) would otherwise find its deleted hash made again.
const MARK_READ = new LuaScript(
  `if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[2])
  return 0
end
redis.call('HSET', KEYS[2], '${BATCH_READ}', '1')
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1`,
  2,
);

/**
 * After its supervisor read every agent of a batch and tried to remove its job (`retainSeconds:
 * 0`): deletes the batch's hash `batchKey` when the job `jobKey` is gone, else marks the hash read
 * (BATCH_READ, kept `ttlMs`) for the worker that ends the batch ({@link endBatchFenced}). Resolves
 * true when the job is still there.
 */
export async function markBatchRead(
  redis: Redis,
  jobKey: string,
  batchKey: string,
  ttlMs: number,
): Promise<boolean> {
  return (await MARK_READ.run(redis, [jobKey, batchKey], [Math.max(1, Math.round(ttlMs))])) === 1;
}
