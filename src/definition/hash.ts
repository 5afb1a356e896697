/**
 * A definition's identity for journals, apart from the parser (src/definition/load.ts): an agent
 * that runs a definition hashes it, and an actor-host thread need not load the YAML parser for that.
 */
import { hashValue } from '../journal/canonical-json.ts';
import type { AgentDefinition } from './types.ts';

/**
 * SHA-256 (hex) of a definition's content, for journals: canonical JSON (sorted keys) of every
 * field except where it was found (`source`, `path`, `bodyLine`, `sourcePositions`) and its raw
 * `text` (and `textHash`), so the same agent hashes the same wherever its file lives and however it is laid out.
 */
export function definitionHash(definition: AgentDefinition): string {
  return hashValue(definitionContent(definition));
}

/** The fields {@link definitionHash} hashes: the definition without its location and raw text. */
export function definitionContent(definition: AgentDefinition): Record<string, unknown> {
  const {
    source: _source,
    path: _path,
    bodyLine: _bodyLine,
    sourcePositions: _positions,
    text: _text,
    textHash: _textHash,
    ...content
  } = definition;
  return content;
}
