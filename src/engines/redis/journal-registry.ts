/**
 * The registry of a queue's journal streams (keys.ts `journals`): a sorted set of agent ids, each
 * scored by the number its stream got as it was created (keys.ts `journalsSeq`, a counter). The
 * index for `Engine.childStarts` (child-index.ts) reads the entries past the last number it saw,
 * new streams only, instead of listing every key of the database with SCAN.
 *
 * Whoever creates a journal stream registers it in the same script call as the entry that creates
 * it, whichever process writes: the journal append (stream-journal.ts `APPEND`; a fork's draft is
 * not an agent's journal key and is not registered) and a fork's rename ({@link renameJournal}).
 * The number is taken in the call that creates the stream, so entries are numbered in the order
 * the streams appeared: a reader that saw up to N misses none created after.
 *
 * Cleanup: a journal given a TTL (`retainSeconds`, {@link retainJournal}) is entered in
 * keys.ts `journalsExpiring` with when it expires; with 0 it is deleted there and then and leaves
 * the registry at once. Each retention also goes over up to `PRUNE_COUNT` journals whose time has
 * come: one gone leaves both sets, one still there (its TTL was set again, or it was made again)
 * is looked at again when its TTL says. So the registry holds about the queue's journals that
 * exist, plus those expired since the last agents ended.
 *
 * Streams written by earlier versions are not registered: the index lists the keys with SCAN once
 * per engine, the first time, for them.
 */
import type { Redis } from 'ioredis';
import { journalRegistryOf } from './keys.ts';
import { LuaScript } from './script.ts';

/** Expired journals' entries removed per retention, at most. */
export const PRUNE_COUNT = 8;

// KEYS: the draft, the journal, the registry, its counter. ARGV: the journal's registry entry.
// RENAMENX, and the journal registered when it was renamed. 1 when renamed.
const RENAME = new LuaScript(
  `if redis.call('RENAMENX', KEYS[1], KEYS[2]) == 0 then return 0 end
redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[4]), ARGV[1])
return 1`,
  4,
);

/**
 * Renames the stream `draft` to the journal `key` unless `key` exists (RENAMENX), registering the
 * journal when it was renamed. Resolves true when it was.
 */
export async function renameJournal(redis: Redis, draft: string, key: string): Promise<boolean> {
  const registry = journalRegistryOf(key);
  if (registry === undefined) return (await redis.renamenx(draft, key)) === 1;
  const reply = await RENAME.run(redis, [draft, key, registry.registry, registry.seq], [registry.member]);
  return reply === 1;
}

// KEYS: the journal, the registry, the expiring set. ARGV: its TTL in ms (0: deleted now), the time
// now (ms, the caller's clock), its registry entry, the journal keys' prefix (`...:agent:`), how
// many due entries to look at. The due journals' keys are built from their entries (not declared:
// the redis engine supports a standalone server only, docs/scaleout.md).
const RETAIN = new LuaScript(
  `local ms, now, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
redis.call('PEXPIRE', KEYS[1], ms)
if ms <= 0 then
  redis.call('ZREM', KEYS[2], member)
  redis.call('ZREM', KEYS[3], member)
else
  redis.call('ZADD', KEYS[3], now + ms, member)
end
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, tonumber(ARGV[5]))
for _, entry in ipairs(due) do
  local ttl = redis.call('PTTL', ARGV[4] .. entry .. ':journal')
  if ttl == -2 then
    redis.call('ZREM', KEYS[2], entry)
    redis.call('ZREM', KEYS[3], entry)
  elseif ttl == -1 then
    redis.call('ZREM', KEYS[3], entry)
  else
    redis.call('ZADD', KEYS[3], now + ttl, entry)
  end
end
return #due`,
  3,
);

/**
 * Gives the journal stream `key` a TTL of `ms` (0: deletes it), keeping its queue's registry to
 * the streams that exist (see the module comment). A key that is not an agent's journal only gets
 * its TTL.
 */
export async function retainJournal(redis: Redis, key: string, ms: number, now = Date.now()): Promise<void> {
  const registry = journalRegistryOf(key);
  if (registry === undefined) {
    await redis.pexpire(key, ms);
    return;
  }
  const prefix = key.slice(0, key.length - `${registry.member}:journal`.length);
  await RETAIN.run(
    redis,
    [key, registry.registry, registry.expiring],
    [Math.max(0, Math.round(ms)), Math.round(now), registry.member, prefix, PRUNE_COUNT],
  );
}
