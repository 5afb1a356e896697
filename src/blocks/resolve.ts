/**
 * Resolving a definition's block references against a store, once, when the agent starts: each
 * range becomes the highest version the store has that satisfies it, pinned for the agent's life
 * (a resumed agent runs the versions its Started event recorded, never a range resolved again).
 */

import { jsonPointer, type PathSegment } from '../definition/problems.ts';
import type { AgentDefinition, DefinitionProblem, ProblemCode, SourcePosition } from '../definition/types.ts';
import { hasErrorCode, isTroupeError, UserError } from '../errors.ts';
import { blockHash } from './hash.ts';
import { highestSatisfying } from './ids.ts';
import type { Block, BlockKind, BlockRef, BlockStore, PinnedBlock, ResolvedBlocks } from './types.ts';

/** The parts of a definition that refer to blocks. */
export type BlockReferences = Pick<
  AgentDefinition,
  'instructions' | 'settings' | 'modelSettingsBlock' | 'path' | 'sourcePositions'
>;

/** True when the definition refers to any block. */
export function hasBlockReferences(definition: BlockReferences): boolean {
  return (
    definition.instructions !== undefined ||
    definition.settings.length > 0 ||
    definition.modelSettingsBlock !== undefined
  );
}

/** What resolving found: the blocks, when every reference resolved, and every problem. */
export interface BlockResolution {
  readonly blocks?: ResolvedBlocks;
  /** Located in the definition (the reference) or in a block's own file (a block that cannot be read). */
  readonly problems: readonly DefinitionProblem[];
}

/** No blocks: what an agent whose definition refers to none runs with. */
export const NO_BLOCKS: ResolvedBlocks = { pinned: [], settings: {}, modelSettings: {} };

/** Resolves every block reference of `definition` against `store`. Never throws. */
export async function resolveBlocks(
  definition: BlockReferences,
  store: BlockStore,
): Promise<BlockResolution> {
  const problems: DefinitionProblem[] = [];
  const at = (path: readonly PathSegment[]): SourcePosition =>
    definition.sourcePositions?.[jsonPointer(path)] ?? { line: 1, column: 1 };
  const problem = (code: ProblemCode, message: string, path: readonly PathSegment[]): void => {
    problems.push({
      severity: 'error',
      code,
      message,
      file: definition.path,
      ...at(path),
      path: jsonPointer(path),
    });
  };
  const pinned: PinnedBlock[] = [];
  const warnings: DefinitionProblem[] = [];

  const fetch = async (
    kind: BlockKind,
    ref: BlockRef,
    path: readonly PathSegment[],
  ): Promise<Block | undefined> => {
    const what = `${KIND_NAMES[kind]} \`${ref.id}\``;
    try {
      const versions = await store.versions(kind, ref.id);
      if (versions.length === 0) {
        problem(
          'block_unresolvable',
          `Expected ${what} in the block store, found none (searched ${store.description})`,
          path,
        );
        return undefined;
      }
      const version = highestSatisfying(versions, ref.version);
      if (version === undefined) {
        problem(
          'block_unresolvable',
          `Expected a version of ${what} that satisfies \`${ref.version}\`, found only ${versions.join(', ')}`,
          [...path.slice(0, -1), 'version'],
        );
        return undefined;
      }
      const block = await store.read(kind, ref.id, version);
      if (block === undefined) {
        problem(
          'block_unresolvable',
          `Expected ${what} ${version} to be readable, but the store no longer has it`,
          path,
        );
        return undefined;
      }
      pinned.push({ kind, id: ref.id, range: ref.version, version, hash: blockHash(block) });
      if (block.warnings !== undefined) warnings.push(...block.warnings);
      return block;
    } catch (error) {
      if (hasErrorCode(error, 'invalid_block') && isTroupeError(error)) {
        const found = error.fields.problems;
        if (Array.isArray(found) && found.length > 0) problems.push(...(found as DefinitionProblem[]));
        problem('invalid_block', `${what} cannot be used: ${error.message}`, path);
      } else {
        const reason = error instanceof Error ? error.message : String(error);
        problem('block_unresolvable', `Could not look up ${what}: ${reason}`, path);
      }
      return undefined;
    }
  };

  let prompt: ResolvedBlocks['prompt'];
  const instructions = definition.instructions;
  if (instructions !== undefined) {
    const block = await fetch('prompt', instructions, ['instructions', 'prompt']);
    if (block?.kind === 'prompt') {
      const values: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(instructions.parameters)) {
        if (Object.hasOwn(block.parameters, name)) values[name] = value;
        else {
          const declared = Object.keys(block.parameters);
          problem(
            'unknown_parameter',
            `Expected parameters that prompt block \`${block.id}\` ${block.version} declares (${declared.length === 0 ? 'it declares none' : declared.join(', ')}), found \`${name}\``,
            ['instructions', 'parameters', name],
          );
        }
      }
      for (const [name, declared] of Object.entries(block.parameters)) {
        if (Object.hasOwn(values, name)) continue;
        if (Object.hasOwn(declared, 'default')) values[name] = declared.default;
        else {
          problem(
            'missing_parameter',
            `Expected a value for parameter \`${name}\`, which prompt block \`${block.id}\` ${block.version} declares without a default, in \`instructions.parameters\``,
            ['instructions'],
          );
        }
      }
      prompt = { text: block.text, source: block.source, textLine: block.textLine, parameters: values };
    }
  }
  const settings: Record<string, Readonly<Record<string, unknown>>> = {};
  for (const [index, ref] of definition.settings.entries()) {
    const block = await fetch('settings', ref, ['settings', index, 'id']);
    if (block?.kind === 'settings') settings[ref.id] = block.values;
  }
  let modelSettings = {};
  if (definition.modelSettingsBlock !== undefined) {
    const block = await fetch('modelSettings', definition.modelSettingsBlock, ['modelSettings', 'id']);
    if (block?.kind === 'modelSettings') modelSettings = block.settings;
  }
  problems.push(...warnings);
  if (problems.some((found) => found.severity === 'error')) return { problems };
  return {
    blocks: {
      pinned,
      ...(prompt === undefined ? {} : { prompt }),
      settings,
      modelSettings,
      ...(warnings.length === 0 ? {} : { warnings }),
    },
    problems,
  };
}

const KIND_NAMES: Readonly<Record<BlockKind, string>> = {
  prompt: 'prompt block',
  settings: 'settings block',
  modelSettings: 'model-settings block',
};

/**
 * {@link resolveBlocks} for an agent about to start: the blocks, or a UserError whose code is the
 * first problem's (`block_unresolvable`, `unknown_parameter`, `missing_parameter`,
 * `invalid_block`), its message every problem as `file:line:column: message`, and `problems` in
 * its fields.
 */
export async function resolveAgentBlocks(
  definition: BlockReferences,
  store: BlockStore,
): Promise<ResolvedBlocks> {
  if (!hasBlockReferences(definition)) return NO_BLOCKS;
  const { blocks, problems } = await resolveBlocks(definition, store);
  if (blocks) return blocks;
  const errors = problems.filter((found) => found.severity === 'error');
  const code =
    errors.find((found) => found.file === definition.path)?.code ?? errors[0]?.code ?? 'block_unresolvable';
  throw new UserError(
    code,
    errors.map((found) => `${found.file}:${found.line}:${found.column}: ${found.message}`).join('\n'),
    {
      problems: errors.map(({ code: kind, message, file, line, column, path }) => ({
        code: kind,
        message,
        file,
        line,
        column,
        path,
      })),
    },
  );
}
