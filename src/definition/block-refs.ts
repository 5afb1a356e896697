/**
 * The definition keys that refer to blocks and hold model settings: `instructions` (a prompt
 * block), `settings` (settings blocks) and `modelSettings` (settings written inline, or a
 * model-settings block with `id` and `version`, optionally with inline keys over it). What can be
 * checked without a block store is checked here: ids, ranges, a block referenced twice, inline
 * model settings. Whether the blocks exist is checked when they are resolved (blocks/resolve.ts).
 */
import { isBlockId, isVersionRange } from '../blocks/ids.ts';
import type { BlockRef, PromptRef } from '../blocks/types.ts';
import { describeValue } from '../errors.ts';
import { type ModelSettings, readModelSettings } from '../providers/model-settings.ts';
import {
  type FieldContext,
  invalid,
  isPlainObject,
  isSet,
  label,
  readObject,
  warnUnknownKeys,
} from './fields.ts';
import { jsonPointer, type PathSegment } from './problems.ts';
import type { SourcePosition } from './types.ts';

/** What the block readers record into: where problems go, and where each reference is written. */
export interface BlockRefContext {
  readonly ctx: FieldContext;
  readonly positions: Map<string, SourcePosition>;
  /** Every block id referenced so far, with the pointer of its first reference. */
  readonly seen: Map<string, string>;
}

/** A fresh context for one definition. */
export function blockRefContext(ctx: FieldContext, positions: Map<string, SourcePosition>): BlockRefContext {
  return { ctx, positions, seen: new Map() };
}

const INSTRUCTION_KEYS = ['prompt', 'version', 'parameters'];

/** `instructions: { prompt: acme.intake, version: ^1, parameters: { queue: billing } }`. */
export function readInstructions(refs: BlockRefContext, value: unknown): PromptRef | undefined {
  const { ctx } = refs;
  const path = ['instructions'];
  const object = readObject(ctx, path, value);
  if (!object) return undefined;
  warnUnknownKeys(ctx, path, object, INSTRUCTION_KEYS);
  const ref = readRef(refs, path, object, 'prompt', 'a prompt block such as `acme.intake`');
  let parameters: Record<string, unknown> = {};
  if (isSet(object.parameters)) {
    const given = readObject(ctx, [...path, 'parameters'], object.parameters);
    if (!given) return undefined;
    parameters = { ...given };
    for (const name of Object.keys(given)) {
      const at = [...path, 'parameters', name];
      refs.positions.set(jsonPointer(at), ctx.data.keyAt(at));
    }
  }
  refs.positions.set(jsonPointer(path), ctx.data.keyAt(path));
  return ref === undefined ? undefined : { ...ref, parameters };
}

/** `settings: [{ id: acme.weights, version: ^1.2.0 }, ...]`. */
export function readSettingsRefs(refs: BlockRefContext, value: unknown): BlockRef[] | undefined {
  const { ctx } = refs;
  if (!Array.isArray(value)) {
    invalid(ctx, ['settings'], 'a list of settings blocks, each `{ id, version }`', value);
    return undefined;
  }
  const found: BlockRef[] = [];
  let failed = false;
  value.forEach((item: unknown, index) => {
    const path = ['settings', index];
    if (!isPlainObject(item)) {
      invalid(ctx, path, 'a settings block reference `{ id, version }`', item);
      failed = true;
      return;
    }
    warnUnknownKeys(ctx, path, item, ['id', 'version']);
    const ref = readRef(refs, path, item, 'id', 'a settings block such as `acme.weights`');
    if (ref === undefined) failed = true;
    else found.push(ref);
  });
  return failed ? undefined : found;
}

/** `modelSettings`: inline settings, or `{ id, version }` naming a block (inline keys beside them win). */
export function readModelSettingsField(
  refs: BlockRefContext,
  value: unknown,
): { readonly settings: ModelSettings; readonly block: BlockRef | undefined } | undefined {
  const { ctx } = refs;
  const path = ['modelSettings'];
  const object = readObject(ctx, path, value);
  if (!object) return undefined;
  const isRef = isSet(object.id) || isSet(object.version);
  let block: BlockRef | undefined;
  if (isRef) {
    block = readRef(refs, path, object, 'id', 'a model-settings block such as `acme.fast`');
    if (block === undefined) return undefined;
  }
  const { settings, problems } = readModelSettings(object, ['id', 'version']);
  let failed = false;
  for (const problem of problems) {
    const at = [...path, ...problem.path];
    if (problem.kind === 'unknown') {
      ctx.problems.warning('unknown_key', `${problem.message}; ignored`, ctx.data.keyAt(at), at);
    } else {
      ctx.problems.error('invalid_field', problem.message, ctx.data.valueAt(at), at);
      failed = true;
    }
  }
  return failed ? undefined : { settings, block };
}

/**
 * Reads `{ <idKey>, version }` at `path`: the id must be a dotted block id, the version a semver
 * range, and the id must not be referenced elsewhere in the definition.
 */
function readRef(
  refs: BlockRefContext,
  path: readonly PathSegment[],
  object: Readonly<Record<string, unknown>>,
  idKey: 'prompt' | 'id',
  what: string,
): BlockRef | undefined {
  const { ctx, positions, seen } = refs;
  const idPath = [...path, idKey];
  const versionPath = [...path, 'version'];
  const id = object[idKey];
  const version = object.version;
  let ok = true;
  if (!isSet(id)) {
    ctx.problems.error(
      'invalid_field',
      `Expected \`${label(idPath)}\` (${what}), found no such key`,
      ctx.data.keyAt(path),
      idPath,
    );
    ok = false;
  } else if (!isBlockId(id)) {
    ctx.problems.error(
      'invalid_block_id',
      `Expected \`${label(idPath)}\` to be a block id: lowercase slugs joined by dots, such as \`acme.intake\`; got ${describeValue(id)}`,
      ctx.data.valueAt(idPath),
      idPath,
    );
    ok = false;
  }
  if (!isSet(version)) {
    ctx.problems.error(
      'invalid_version_range',
      `Expected \`${label(versionPath)}\` (a semver range such as \`^1.2.0\` or an exact version), found no such key`,
      ctx.data.keyAt(path),
      versionPath,
    );
    ok = false;
  } else if (!isVersionRange(typeof version === 'number' ? String(version) : version)) {
    ctx.problems.error(
      'invalid_version_range',
      `Expected \`${label(versionPath)}\` to be a semver range such as \`^1.2.0\`, \`~1.4\` or \`1.2.3\`, got ${describeValue(version)}`,
      ctx.data.valueAt(versionPath),
      versionPath,
    );
    ok = false;
  }
  if (isBlockId(id)) {
    const pointer = jsonPointer(idPath);
    const first = seen.get(id);
    if (first !== undefined) {
      ctx.problems.error(
        'duplicate_block',
        `Expected each block to be referenced once, found \`${id}\` again (first at ${first})`,
        ctx.data.valueAt(idPath),
        idPath,
      );
      ok = false;
    } else {
      seen.set(id, pointer);
    }
    positions.set(pointer, ctx.data.valueAt(idPath));
    positions.set(jsonPointer(versionPath), ctx.data.valueAt(isSet(version) ? versionPath : path));
  }
  if (!ok || typeof id !== 'string') return undefined;
  // YAML reads `version: 1` as a number; a range is text.
  return { id, version: String(version).trim() };
}
