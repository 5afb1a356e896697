/**
 * Block stores for apps: blocks held in memory (a list or a Map), or looked up by a function (a
 * database, a config service). Either one is passed as `blocks` to `runAgent` or the Supervisor.
 */
import { describeValue, UserError } from '../errors.ts';
import { sortVersionsDescending } from './ids.ts';
import { blockFromInput } from './parse.ts';
import type { Block, BlockInput, BlockKind, BlockStore } from './types.ts';

/**
 * A store over blocks given in code, checked once, here: a bad id, version or setting throws
 * UserError `invalid_block`, and two blocks of the same kind, id and version `duplicate_block`.
 *
 * @example
 * const blocks = memoryBlockStore([
 *   { kind: 'prompt', id: 'acme.intake', version: '1.0.0', text: 'Triage ${{ queue }} tickets.', parameters: ['queue'] },
 *   { kind: 'settings', id: 'acme.weights', version: '1.2.0', values: { urgency: 0.7 } },
 * ]);
 */
export function memoryBlockStore(blocks: Iterable<BlockInput> | ReadonlyMap<string, BlockInput>): BlockStore {
  const inputs = blocks instanceof Map ? [...blocks.values()] : [...(blocks as Iterable<BlockInput>)];
  const byKey = new Map<string, Map<string, Block>>();
  for (const input of inputs) {
    const block = blockFromInput(input);
    const key = `${block.kind}\n${block.id}`;
    const versions = byKey.get(key) ?? new Map<string, Block>();
    if (versions.has(block.version)) {
      throw new UserError(
        'duplicate_block',
        `Expected one ${block.kind} block ${block.id}@${block.version}, found two`,
        { kind: block.kind, id: block.id, version: block.version },
      );
    }
    versions.set(block.version, block);
    byKey.set(key, versions);
  }
  return {
    description: `${inputs.length} block(s) given in code`,
    async versions(kind, id) {
      return sortVersionsDescending([...(byKey.get(`${kind}\n${id}`)?.keys() ?? [])]);
    },
    async read(kind, id, version) {
      return byKey.get(`${kind}\n${id}`)?.get(version);
    },
  };
}

/** Looks up every version of one block; nothing (or an empty list) when there is no such block. */
export type BlockLookup = (
  kind: BlockKind,
  id: string,
) => Iterable<BlockInput> | undefined | Promise<Iterable<BlockInput> | undefined>;

/**
 * A store that asks `lookup` for a block's versions each time an agent needs it (a database, a
 * config service). What it returns is checked like {@link memoryBlockStore}'s blocks; a block of
 * another kind or id than asked is an `invalid_block` error.
 */
export function functionBlockStore(lookup: BlockLookup, description = 'a block lookup function'): BlockStore {
  if (typeof lookup !== 'function') {
    throw new UserError('invalid_option', `Expected a block lookup function, got ${describeValue(lookup)}`, {
      option: 'blocks',
    });
  }
  const versionsOf = async (kind: BlockKind, id: string): Promise<Map<string, Block>> => {
    const found = new Map<string, Block>();
    for (const input of (await lookup(kind, id)) ?? []) {
      const block = blockFromInput(input);
      if (block.kind !== kind || block.id !== id) {
        throw new UserError(
          'invalid_block',
          `Expected the lookup for ${kind} block ${id} to return versions of it, got ${block.kind} block ${block.id}`,
          { kind, id },
        );
      }
      found.set(block.version, block);
    }
    return found;
  };
  return {
    description,
    async versions(kind, id) {
      return sortVersionsDescending([...(await versionsOf(kind, id)).keys()]);
    },
    async read(kind, id, version) {
      return (await versionsOf(kind, id)).get(version);
    },
  };
}
