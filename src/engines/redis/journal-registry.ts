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
 * Streams written by earlier versions are not registered: the index lists the keys with SCAN once
 * per engine, the first time, for them.
 */
import type { Redis } from 'ioredis';
import { journalRegistryOf } from './keys.ts';
import { LuaScript } from './script.ts';

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
