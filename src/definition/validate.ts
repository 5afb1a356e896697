/**
 * Frontmatter values -> a fully resolved AgentDefinition with every default filled in, or the
 * complete list of what is wrong with them.
 */
import {
  DEFAULT_BASH_OUTPUT_BYTE_LIMIT,
  DEFAULT_BASH_TIMEOUT_SECS,
  DEFAULT_MAX_STEPS,
  DEFAULT_RECOVERY,
  DEFAULT_TOOL_RETRY,
  HARD_MAX_STEPS,
} from '../constants.ts';
import { describeValue } from '../errors.ts';
import {
  DEFAULT_MODEL,
  DISPLAY_KEYS,
  defaultCompletionReminder,
  KNOWN_KEYS,
  MODEL_FACING_NAME_PATTERN,
  NAME_PATTERN,
} from './constants.ts';
import {
  type FieldContext,
  invalid,
  isSet,
  label,
  type NameList,
  type PlainObject,
  readBoolean,
  readEnum,
  readNameList,
  readNumber,
  readObject,
  readRetryPolicy,
  readString,
  suggestion,
  warnUnknownKeys,
} from './fields.ts';
import type { FrontmatterSplit } from './frontmatter.ts';
import type { FrontmatterData } from './frontmatter-data.ts';
import { outputSchemaProblems } from './output-schema.ts';
import type { PathSegment, ProblemList } from './problems.ts';
import type {
  AgentDefinition,
  BashConfig,
  CompletionRequirement,
  DefinitionSource,
  OutputFormat,
  PermissionMode,
  PromptMode,
  ToolConfig,
} from './types.ts';

/** Where a definition comes from and what it may refer to. */
export interface ValidationTarget {
  readonly source: DefinitionSource;
  /** Absolute path or `builtin:<name>`. */
  readonly path: string;
  /**
   * Canonical tool names of the tool registry. When given, override and config keys must name one
   * of them (`unknown_tool_override` errors) and `tools`/`disallowedTools` entries that name none
   * get `unknown_tool` warnings.
   */
  readonly knownTools?: ReadonlySet<string>;
}

const PROMPT_MODES: readonly PromptMode[] = ['extend', 'full'];
const PERMISSION_MODES: readonly PermissionMode[] = ['default', 'acceptEdits', 'dontAsk', 'plan'];
const OUTPUT_FORMATS: readonly OutputFormat[] = ['default', 'concise'];

/** Validates `data` and returns the resolved definition, or undefined when any error was recorded. */
export function validateDefinition(
  data: FrontmatterData,
  split: FrontmatterSplit,
  target: ValidationTarget,
  problems: ProblemList,
): AgentDefinition | undefined {
  const ctx: FieldContext = { data, problems };
  const values = data.values;
  // Every reader records an error before it returns undefined, so a fallback below only stands in
  // for a value whose definition is rejected anyway.
  const read = <T>(key: string, reader: (value: unknown) => T | undefined, fallback: T): T =>
    isSet(values[key]) ? (reader(values[key]) ?? fallback) : fallback;

  const name = readName(ctx, values.name, target.source);
  const description = isSet(values.description)
    ? readString(ctx, ['description'], values.description)
    : missing(ctx, ['description'], 'a one-line summary of when to use the agent');
  if (split.body === '') {
    problems.warning(
      'missing_field',
      'Expected a Markdown body (the system prompt) after the closing fence, found nothing',
      { line: split.bodyLine - 1, column: 1 },
    );
  }
  const tools = read('tools', (value) => readTools(ctx, target, value), ALL_TOOLS);
  const definition: Omit<AgentDefinition, 'name' | 'description'> = {
    body: split.body,
    promptMode: read('promptMode', (value) => readEnum(ctx, ['promptMode'], value, PROMPT_MODES), 'extend'),
    tools: tools.kind === 'all' ? undefined : tools.names,
    disallowedTools: read('disallowedTools', (value) => readNames(ctx, target, 'disallowedTools', value), []),
    permissionMode: read(
      'permissionMode',
      (value) => readEnum(ctx, ['permissionMode'], value, PERMISSION_MODES),
      'default',
    ),
    skills: read('skills', (value) => readNames(ctx, undefined, 'skills', value), []),
    agentsMd: read('agentsMd', (value) => readBoolean(ctx, ['agentsMd'], value), true),
    outputFormat: read(
      'outputFormat',
      (value) => readEnum(ctx, ['outputFormat'], value, OUTPUT_FORMATS),
      'default',
    ),
    bash: read('bash', (value) => readBash(ctx, value), DEFAULT_BASH),
    toolNameOverrides: read('toolNameOverrides', (value) => readToolNameOverrides(ctx, target, value), {}),
    paramNameOverrides: read('paramNameOverrides', (value) => readParamNameOverrides(ctx, target, value), {}),
    completionRequirement: read(
      'completionRequirement',
      (value) => readCompletionRequirement(ctx, value),
      undefined,
    ),
    toolConfig: read('toolConfig', (value) => readToolConfig(ctx, target, value), {}),
    model: read('model', (value) => readString(ctx, ['model'], value), DEFAULT_MODEL),
    maxSteps: readMaxSteps(ctx, values) ?? DEFAULT_MAX_STEPS,
    enabled: read('enabled', (value) => readBoolean(ctx, ['enabled'], value), true),
    outputSchema: read('outputSchema', (value) => readOutputSchema(ctx, value), undefined),
    source: target.source,
    path: target.path,
    extra: readExtra(ctx, values),
    bodyLine: split.bodyLine,
  };
  if (problems.hasErrors || name === undefined || description === undefined) return undefined;
  return { name, description, ...definition };
}

const ALL_TOOLS: NameList = { kind: 'all' };
const DEFAULT_BASH: BashConfig = {
  timeoutSecs: DEFAULT_BASH_TIMEOUT_SECS,
  outputByteLimit: DEFAULT_BASH_OUTPUT_BYTE_LIMIT,
};

function missing(ctx: FieldContext, path: readonly PathSegment[], what: string): undefined {
  const parent = path.slice(0, -1);
  ctx.problems.error(
    parent.length === 0 ? 'missing_field' : 'invalid_field',
    `Expected \`${label(path)}\` (${what}), found no such key`,
    ctx.data.keyAt(parent),
    path,
  );
  return undefined;
}

/** Lowercases and joins words with `-`: `Python DevOps/CI-CD Expert` -> `python-devops-ci-cd-expert`. */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replaceAll(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replaceAll(/[^a-z0-9]+/g, (separator) =>
      separator.length === 1 && '-_.'.includes(separator) ? separator : '-',
    )
    .replaceAll(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
}

function readName(ctx: FieldContext, value: unknown, source: DefinitionSource): string | undefined {
  if (!isSet(value)) return missing(ctx, ['name'], 'a lowercase slug such as `code-reviewer`');
  if (typeof value !== 'string' || value.trim() === '') {
    invalid(ctx, ['name'], 'a lowercase slug such as `code-reviewer`', value);
    return undefined;
  }
  const name = value.trim();
  if (NAME_PATTERN.test(name)) return name;
  const slug = slugify(name);
  const usable = NAME_PATTERN.test(slug);
  if (source === 'compat' && usable) {
    ctx.problems.warning(
      'name_slugified',
      `Expected \`name\` to be a lowercase slug, got ${describeValue(value)}; using \`${slug}\``,
      ctx.data.valueAt(['name']),
      ['name'],
    );
    return slug;
  }
  const hint = usable ? ` (for example \`${slug}\`)` : '';
  invalid(ctx, ['name'], `a lowercase slug: letters, digits and single \`-\`, \`_\` or \`.\`${hint}`, value);
  return undefined;
}

function readTools(ctx: FieldContext, target: ValidationTarget, value: unknown): NameList | undefined {
  const list = readNameList(ctx, ['tools'], value);
  if (list?.kind === 'names') warnUnknownTools(ctx, target, 'tools', value, list.names);
  return list;
}

function readNames(
  ctx: FieldContext,
  target: ValidationTarget | undefined,
  key: 'disallowedTools' | 'skills',
  value: unknown,
): readonly string[] | undefined {
  const list = readNameList(ctx, [key], value);
  if (list?.kind === 'all') {
    invalid(ctx, [key], 'a list of names (`*` is only meaningful in `tools`)', value);
    return undefined;
  }
  if (list && target) warnUnknownTools(ctx, target, key, value, list.names);
  return list?.names;
}

function warnUnknownTools(
  ctx: FieldContext,
  target: ValidationTarget,
  key: string,
  value: unknown,
  names: readonly string[],
): void {
  const known = target.knownTools;
  if (!known) return;
  for (const name of names) {
    if (known.has(name)) continue;
    const index = Array.isArray(value)
      ? value.findIndex((item) => typeof item === 'string' && item.trim() === name)
      : -1;
    const path = index === -1 ? [key] : [key, index];
    ctx.problems.warning(
      'unknown_tool',
      `Expected a registered tool name in \`${key}\`, found \`${name}\`${suggestion(name, known)}`,
      ctx.data.valueAt(path),
      path,
    );
  }
}

/** Records `unknown_tool_override` for a key that names no registered tool; true when it is known. */
function checkToolKey(
  ctx: FieldContext,
  target: ValidationTarget,
  path: readonly PathSegment[],
  tool: string,
): boolean {
  const known = target.knownTools;
  if (!known || known.has(tool)) return true;
  ctx.problems.error(
    'unknown_tool_override',
    `Expected \`${label(path.slice(0, -1))}\` to name registered tools, found \`${tool}\`${suggestion(tool, known)}`,
    ctx.data.keyAt(path),
    path,
  );
  return false;
}

function readModelFacingName(
  ctx: FieldContext,
  path: readonly PathSegment[],
  value: unknown,
): string | undefined {
  if (typeof value === 'string' && MODEL_FACING_NAME_PATTERN.test(value)) return value;
  invalid(ctx, path, 'a model-facing name of 1-64 letters, digits, `_` or `-`', value);
  return undefined;
}

function readToolNameOverrides(
  ctx: FieldContext,
  target: ValidationTarget,
  value: unknown,
): Record<string, string> | undefined {
  const object = readObject(ctx, ['toolNameOverrides'], value);
  if (!object) return undefined;
  const entries: [string, string][] = [];
  const byFacingName = new Map<string, string>();
  for (const [tool, facing] of Object.entries(object)) {
    const path = ['toolNameOverrides', tool];
    checkToolKey(ctx, target, path, tool);
    const name = readModelFacingName(ctx, path, facing);
    if (name === undefined) continue;
    const clash = byFacingName.get(name);
    if (clash !== undefined) {
      invalid(ctx, path, `a name no other tool uses (\`${clash}\` is already shown as \`${name}\`)`, facing);
      continue;
    }
    byFacingName.set(name, tool);
    entries.push([tool, name]);
  }
  return Object.fromEntries(entries);
}

function readParamNameOverrides(
  ctx: FieldContext,
  target: ValidationTarget,
  value: unknown,
): Record<string, Record<string, string>> | undefined {
  const object = readObject(ctx, ['paramNameOverrides'], value);
  if (!object) return undefined;
  const entries: [string, Record<string, string>][] = [];
  for (const [tool, params] of Object.entries(object)) {
    const path = ['paramNameOverrides', tool];
    checkToolKey(ctx, target, path, tool);
    const map = readObject(ctx, path, params);
    if (!map) continue;
    const renamed: [string, string][] = [];
    for (const [param, facing] of Object.entries(map)) {
      const name = readModelFacingName(ctx, [...path, param], facing);
      if (name !== undefined) renamed.push([param, name]);
    }
    entries.push([tool, Object.fromEntries(renamed)]);
  }
  return Object.fromEntries(entries);
}

const BASH_KEYS = ['timeoutSecs', 'outputByteLimit', 'cmdPrefix'];

function readBash(ctx: FieldContext, value: unknown): BashConfig | undefined {
  const object = readObject(ctx, ['bash'], value);
  if (!object) return undefined;
  warnUnknownKeys(ctx, ['bash'], object, BASH_KEYS);
  const timeoutSecs = isSet(object.timeoutSecs)
    ? readNumber(ctx, ['bash', 'timeoutSecs'], object.timeoutSecs, { integer: false, min: Number.MIN_VALUE })
    : DEFAULT_BASH.timeoutSecs;
  const outputByteLimit = isSet(object.outputByteLimit)
    ? readNumber(ctx, ['bash', 'outputByteLimit'], object.outputByteLimit, { integer: true, min: 1 })
    : DEFAULT_BASH.outputByteLimit;
  const cmdPrefix = isSet(object.cmdPrefix)
    ? readString(ctx, ['bash', 'cmdPrefix'], object.cmdPrefix)
    : undefined;
  if (timeoutSecs === undefined || outputByteLimit === undefined) return undefined;
  return cmdPrefix === undefined
    ? { timeoutSecs, outputByteLimit }
    : { timeoutSecs, outputByteLimit, cmdPrefix };
}

const COMPLETION_KEYS = ['tool', 'reminder', 'recovery'];

function readCompletionRequirement(ctx: FieldContext, value: unknown): CompletionRequirement | undefined {
  const path = ['completionRequirement'];
  const object = readObject(ctx, path, value);
  if (!object) return undefined;
  warnUnknownKeys(ctx, path, object, COMPLETION_KEYS);
  const tool = isSet(object.tool)
    ? readString(ctx, [...path, 'tool'], object.tool)
    : missing(ctx, [...path, 'tool'], 'the tool that must be called to finish, such as `complete_task`');
  const reminder = isSet(object.reminder)
    ? readString(ctx, [...path, 'reminder'], object.reminder)
    : undefined;
  const recovery = readRetryPolicy(ctx, [...path, 'recovery'], object.recovery, DEFAULT_RECOVERY);
  if (tool === undefined || recovery === undefined) return undefined;
  return { tool, reminder: reminder ?? defaultCompletionReminder(tool), recovery };
}

function readToolConfig(
  ctx: FieldContext,
  target: ValidationTarget,
  value: unknown,
): Record<string, ToolConfig> | undefined {
  const object = readObject(ctx, ['toolConfig'], value);
  if (!object) return undefined;
  const entries: [string, ToolConfig][] = [];
  for (const [tool, config] of Object.entries(object)) {
    const path = ['toolConfig', tool];
    checkToolKey(ctx, target, path, tool);
    const settings = readObject(ctx, path, config);
    if (!settings) continue;
    warnUnknownKeys(ctx, path, settings, ['retry']);
    const retry = readRetryPolicy(ctx, [...path, 'retry'], settings.retry, DEFAULT_TOOL_RETRY);
    if (retry) entries.push([tool, { retry }]);
  }
  return Object.fromEntries(entries);
}

/** `maxSteps`, or Claude Code's `maxTurns` when `maxSteps` is not set. */
function readMaxSteps(ctx: FieldContext, values: PlainObject): number | undefined {
  const key = isSet(values.maxSteps) ? 'maxSteps' : isSet(values.maxTurns) ? 'maxTurns' : undefined;
  if (key === undefined) return DEFAULT_MAX_STEPS;
  if (key === 'maxSteps' && isSet(values.maxTurns)) {
    ctx.problems.warning(
      'invalid_field',
      'Expected either `maxSteps` or `maxTurns`, found both; `maxTurns` is ignored',
      ctx.data.keyAt(['maxTurns']),
      ['maxTurns'],
    );
  }
  const steps = readNumber(ctx, [key], values[key], { integer: true, min: 1 });
  if (steps !== undefined && steps > HARD_MAX_STEPS) {
    ctx.problems.warning(
      'invalid_field',
      `Expected \`${key}\` to be at most ${HARD_MAX_STEPS}, got ${describeValue(steps)}; runs stop at ${HARD_MAX_STEPS} model requests`,
      ctx.data.valueAt([key]),
      [key],
    );
  }
  return steps;
}

function readOutputSchema(ctx: FieldContext, value: unknown): Readonly<Record<string, unknown>> | undefined {
  const schema = readObject(ctx, ['outputSchema'], value);
  if (!schema) return undefined;
  const reasons = outputSchemaProblems(schema);
  if (reasons.length === 0) return schema;
  ctx.problems.error(
    'invalid_field',
    `Expected \`outputSchema\` to be a valid JSON Schema, found: ${reasons.join('; ')}`,
    ctx.data.valueAt(['outputSchema']),
    ['outputSchema'],
  );
  return undefined;
}

/** Unknown top-level keys, kept as written; display keys (`color`...) are kept without a warning. */
function readExtra(ctx: FieldContext, values: PlainObject): Record<string, unknown> {
  const extra = Object.entries(values).filter(([key]) => !KNOWN_KEYS.has(key));
  for (const [key] of extra) {
    if (DISPLAY_KEYS.has(key)) continue;
    ctx.problems.warning(
      'unknown_key',
      `Unknown key \`${key}\`${suggestion(key, KNOWN_KEYS)}; kept in \`extra\`, otherwise ignored`,
      ctx.data.keyAt([key]),
      [key],
    );
  }
  return Object.fromEntries(extra);
}
