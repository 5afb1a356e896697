/**
 * Writes to a batch's hash (keys.ts `batch`) from outside the batch's run: a job an agent was
 * handed off to marks it `h` when its own run ends, long after the batch may have ended. By then
 * the hash may be gone (its supervisor deleted it once it had read every agent, `retainSeconds: 0`;
 * or it expired): a plain HSET made a new hash holding only that `h`, which nobody reads.
 */
import type { Redis } from 'ioredis';
import { HANDED_OFF } from './constants.ts';
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
