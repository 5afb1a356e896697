/**
 * Reading one block: a prompt block file (`<version>.md`: optional YAML frontmatter declaring
 * `parameters`, then the template), a settings or model-settings file (`<version>.yaml`: a
 * mapping), or a block an app hands over in code. Problems are located in the block's file, like
 * definition problems.
 */

import type { FieldContext } from '../definition/fields.ts';
import { invalid, isPlainObject, isSet, readString, warnUnknownKeys } from '../definition/fields.ts';
import { type FrontmatterSplit, normalizeSource, splitFrontmatter } from '../definition/frontmatter.ts';
import { FILE_START, ProblemList } from '../definition/problems.ts';
import type { DefinitionProblem } from '../definition/types.ts';
import { readFrontmatter } from '../definition/yaml-frontmatter.ts';
import { describeValue, UserError } from '../errors.ts';
import { PROMPT_VARIABLES } from '../prompt/assemble.ts';
import { readModelSettings } from '../providers/model-settings.ts';
import { isBlockId, isExactVersion } from './ids.ts';
import type { Block, BlockInput, BlockKind, PromptBlock, PromptParameter } from './types.ts';

export { blockHash } from './hash.ts';

/**
 * Template variables troupe sets itself (and the base template's own two): a prompt block cannot
 * declare parameters of these names.
 */
export const RESERVED_PARAMETER_NAMES: ReadonlySet<string> = new Set([
  ...PROMPT_VARIABLES,
  'output_format',
  'background_tools',
]);

/** A parameter name a template can read: letters, digits and `_`, not starting with a digit. */
const PARAMETER_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A block read from text, or every problem that stops it from being read. */
export interface BlockParse {
  readonly block?: Block;
  readonly errors: readonly DefinitionProblem[];
  readonly warnings: readonly DefinitionProblem[];
}

/** Where a block's text came from. */
export interface BlockOrigin {
  readonly kind: BlockKind;
  readonly id: string;
  readonly version: string;
  /** Absolute file path (or another name for problems). */
  readonly file: string;
}

/** Parses the text of a block file. Never throws. */
export function parseBlockText(text: string, origin: BlockOrigin): BlockParse {
  const problems = new ProblemList(origin.file);
  let block: Block | undefined;
  try {
    block =
      origin.kind === 'prompt' ? parsePrompt(text, origin, problems) : parseData(text, origin, problems);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    problems.error('parse_error', `Internal error while reading the block: ${reason}`, FILE_START);
  }
  return {
    ...(block === undefined || problems.hasErrors ? {} : { block }),
    errors: problems.errors,
    warnings: problems.warnings,
  };
}

const PROMPT_KEYS = ['description', 'parameters'];

function parsePrompt(text: string, origin: BlockOrigin, problems: ProblemList): PromptBlock | undefined {
  const source = normalizeSource(text);
  const lines = source.split('\n');
  const first = lines.findIndex((line) => line.trim() !== '');
  // The frontmatter is optional: a block without parameters can be the template alone.
  if (first === -1 || lines[first]?.trimEnd() !== '---') {
    const start = first === -1 ? 0 : first;
    return promptBlock(origin, lines.slice(start).join('\n').trimEnd(), start + 1, {});
  }
  const split = splitFrontmatter(source, 'strict', problems);
  if (split === undefined) return undefined;
  const data = readFrontmatter(split, 'strict', problems);
  if (data === undefined) return undefined;
  const ctx: FieldContext = { data, problems };
  warnUnknownKeys(ctx, [], data.values, PROMPT_KEYS);
  const description = isSet(data.values.description)
    ? readString(ctx, ['description'], data.values.description)
    : undefined;
  const parameters = readParameters(ctx, data.values.parameters);
  if (parameters === undefined) return undefined;
  return promptBlock(origin, split.body, split.bodyLine, parameters, description);
}

function promptBlock(
  origin: BlockOrigin,
  text: string,
  textLine: number,
  parameters: Readonly<Record<string, PromptParameter>>,
  description?: string,
): PromptBlock {
  return {
    kind: 'prompt',
    id: origin.id,
    version: origin.version,
    source: origin.file,
    ...(description === undefined ? {} : { description }),
    text,
    textLine,
    parameters,
  };
}

/** `parameters`: a list of names (each required) or name -> `{ description?, default? }` (or nothing). */
function readParameters(ctx: FieldContext, value: unknown): Record<string, PromptParameter> | undefined {
  if (!isSet(value)) return {};
  const entries: [string, unknown, (string | number)[]][] = Array.isArray(value)
    ? value.map((name: unknown, index) => [typeof name === 'string' ? name : '', name, ['parameters', index]])
    : isPlainObject(value)
      ? Object.entries(value).map(([name, spec]) => [name, spec, ['parameters', name]])
      : [];
  if (!Array.isArray(value) && !isPlainObject(value)) {
    invalid(
      ctx,
      ['parameters'],
      'a list of parameter names or a mapping of name -> { description, default }',
      value,
    );
    return undefined;
  }
  const parameters: Record<string, PromptParameter> = {};
  /** Where each listed name is first declared (a mapping cannot repeat a key: YAML refuses it). */
  const firstAt = new Map<string, number>();
  let failed = false;
  for (const [name, spec, path] of entries) {
    if (!PARAMETER_NAME.test(name) || RESERVED_PARAMETER_NAMES.has(name)) {
      const why = RESERVED_PARAMETER_NAMES.has(name)
        ? ` (\`${name}\` is one of troupe's own template variables)`
        : '';
      invalid(
        ctx,
        path,
        `a parameter name of letters, digits and \`_\`${why}`,
        Array.isArray(value) ? spec : name,
      );
      failed = true;
      continue;
    }
    const index = Array.isArray(value) ? path[1] : undefined;
    if (typeof index === 'number') {
      const first = firstAt.get(name);
      if (first !== undefined) {
        ctx.problems.error(
          'duplicate_parameter',
          `Expected each parameter to be declared once, found \`${name}\` again (first at /parameters/${first})`,
          ctx.data.valueAt(path),
          path,
        );
        failed = true;
        continue;
      }
      firstAt.set(name, index);
    }
    if (Array.isArray(value) || !isSet(spec)) {
      parameters[name] = {};
      continue;
    }
    if (!isPlainObject(spec)) {
      invalid(ctx, path, 'a mapping with `description` and/or `default`', spec);
      failed = true;
      continue;
    }
    warnUnknownKeys(ctx, path, spec, ['description', 'default']);
    const description = isSet(spec.description)
      ? readString(ctx, [...path, 'description'], spec.description)
      : undefined;
    parameters[name] = {
      ...(description === undefined ? {} : { description }),
      ...(spec.default === undefined ? {} : { default: spec.default }),
    };
  }
  return failed ? undefined : parameters;
}

/** A settings or model-settings file: the whole file is one YAML mapping. */
function parseData(text: string, origin: BlockOrigin, problems: ProblemList): Block | undefined {
  const yaml = normalizeSource(text);
  const split: FrontmatterSplit = {
    yaml,
    yamlLine: 1,
    columnShifts: [],
    body: '',
    bodyLine: yaml.split('\n').length + 1,
  };
  const subject = origin.kind === 'settings' ? 'settings file' : 'model-settings file';
  const data = readFrontmatter(split, 'strict', problems, subject);
  if (data === undefined) return undefined;
  const base = { id: origin.id, version: origin.version, source: origin.file };
  if (origin.kind === 'settings') return { kind: 'settings', ...base, values: data.values };
  const { settings, problems: found } = readModelSettings(data.values);
  for (const problem of found) {
    const at = data.valueAt(problem.path);
    if (problem.kind === 'unknown')
      problems.warning('unknown_key', `${problem.message}; ignored`, data.keyAt(problem.path), problem.path);
    else problems.error('invalid_field', problem.message, at, problem.path);
  }
  return { kind: 'modelSettings', ...base, settings };
}

/**
 * A block an app hands over in code, checked. Throws UserError `invalid_block` naming what is
 * wrong (a bad id or version, a parameter name, a model setting).
 */
export function blockFromInput(input: BlockInput): Block {
  const fail = (message: string): never => {
    throw new UserError('invalid_block', message, { id: input?.id, version: input?.version });
  };
  if (typeof input !== 'object' || input === null) fail(`Expected a block, got ${describeValue(input)}`);
  const kinds: readonly BlockKind[] = ['prompt', 'settings', 'modelSettings'];
  if (!kinds.includes(input.kind))
    fail(`Expected \`kind\` to be prompt, settings or modelSettings, got ${describeValue(input.kind)}`);
  if (!isBlockId(input.id))
    fail(`Expected \`id\` to be a dotted block id such as \`acme.intake\`, got ${describeValue(input.id)}`);
  if (!isExactVersion(input.version))
    fail(
      `Expected \`version\` of block ${input.id} to be an exact semver version such as \`1.2.0\`, got ${describeValue(input.version)}`,
    );
  const source = `memory:${input.id}@${input.version}`;
  const base = { id: input.id, version: input.version, source };
  switch (input.kind) {
    case 'prompt': {
      if (typeof input.text !== 'string')
        fail(
          `Expected \`text\` of block ${input.id}@${input.version} to be a string, got ${describeValue(input.text)}`,
        );
      const declared = input.parameters ?? {};
      const named: [string, PromptParameter][] = Array.isArray(declared)
        ? declared.map((name: string) => [name, {}])
        : Object.entries(declared as Readonly<Record<string, PromptParameter>>);
      const declaredNames = new Set<string>();
      for (const [name] of named) {
        if (!PARAMETER_NAME.test(name) || RESERVED_PARAMETER_NAMES.has(name))
          fail(
            `Expected parameter names of block ${input.id}@${input.version} to be letters, digits and \`_\` (not troupe's own variables), got ${describeValue(name)}`,
          );
        if (declaredNames.has(name))
          fail(
            `Expected each parameter of block ${input.id}@${input.version} to be declared once, found \`${name}\` again`,
          );
        declaredNames.add(name);
      }
      return {
        kind: 'prompt',
        ...base,
        ...(input.description === undefined ? {} : { description: input.description }),
        text: input.text,
        textLine: 1,
        parameters: Object.fromEntries(named.map(([name, spec]) => [name, { ...spec }])),
      };
    }
    case 'settings':
      if (!isPlainObject(input.values))
        fail(
          `Expected \`values\` of block ${input.id}@${input.version} to be a mapping, got ${describeValue(input.values)}`,
        );
      return { kind: 'settings', ...base, values: input.values };
    case 'modelSettings': {
      const { settings, problems } = readModelSettings(input.settings);
      const first = problems[0];
      if (first !== undefined) fail(`Block ${input.id}@${input.version}: ${first.message}`);
      return { kind: 'modelSettings', ...base, settings };
    }
  }
}
