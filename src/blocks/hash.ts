/**
 * A block's identity for journals, apart from the block parser (src/blocks/parse.ts): resolving an
 * agent's blocks hashes them, and an actor-host thread need not load the YAML parser for that.
 */
import { hashValue } from '../journal/canonical-json.ts';
import type { Block } from './types.ts';

/**
 * SHA-256 (hex) of a block's content: what an agent ran with, wherever the block was stored. The
 * id, version and location are recorded beside it, not hashed.
 */
export function blockHash(block: Block): string {
  switch (block.kind) {
    case 'prompt':
      return hashValue({ kind: block.kind, text: block.text, parameters: block.parameters });
    case 'settings':
      return hashValue({ kind: block.kind, values: block.values });
    case 'modelSettings':
      return hashValue({ kind: block.kind, settings: block.settings });
  }
}
