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
import { isMcpServerName, type McpServerRef, readMcpServerConfig } from '../mcp/config.ts';
import {
  NEVER_RETRIED_TOOL_NAMES,
  SPAWN_AGENT,
  WAIT_FOR_INSTRUCTION as WAIT_FOR_INSTRUCTION_TOOL,
} from '../tools/builtin/orchestration.ts';
import { tryParseRule } from '../tools/rules.ts';
import { blockRefContext, readInstructions, readModelSettingsField, readSettingsRefs } from './block-refs.ts';
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
  isPlainObject,
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
import { readModel } from './model-name.ts';
import {
  BASH_OUTPUT_BYTE_LIMIT_RANGE,
  BASH_TIMEOUT_SECS_RANGE,
  MAX_STEPS_RANGE,
  TOOL_TIMEOUT_MS_RANGE,
} from './number-ranges.ts';
import { outputSchemaProblems } from './output-schema.ts';
import { jsonPointer, type PathSegment, type ProblemList } from './problems.ts';
import { type KnownTools, toolReferenceProblems } from './tool-references.ts';
import type {
  AgentDefinition,
  BashConfig,
  CompletionRequirement,
  DefinitionSource,
  OutputFormat,
  PermissionMode,
  PermissionRules,
  PromptMode,
  SourcePosition,
  ToolConfig,
} from './types.ts';

/** Where a definition comes from and what it may refer to. */
export interface ValidationTarget {
  readonly source: DefinitionSource;
  /** Absolute path or `builtin:<name>`. */
  readonly path: string;
  /**
   * The tools that exist (canonical names of the tool registry, or a {@link KnownTools} that also
   * names MCP servers). When given, override and config keys must name one of them
   * (`unknown_tool_override` errors) and `tools`/`disallowedTools` entries that name none get
   * `unknown_tool` warnings (see tool-references.ts).
   */
  readonly knownTools?: ReadonlySet<string> | KnownTools;
}

const PROMPT_MODES: readonly PromptMode[] = ['extend', 'full'];
const PERMISSION_MODES: readonly PermissionMode[] = [
  'default',
  'acceptEdits',
  'dontAsk',
  'plan',
  'bypassPermissions',
];
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
  const positions = new Map<string, SourcePosition>();
  const refs: References = { ctx, split, positions };
  // Every reader records an error before it returns undefined, so a fallback below only stands in
  // for a value whose definition is rejected anyway.
  const read = <T>(key: string, reader: (value: unknown) => T | undefined, fallback: T): T =>
    isSet(values[key]) ? (reader(values[key]) ?? fallback) : fallback;

  const name = readName(ctx, values.name, target.source);
  const description = isSet(values.description)
    ? readString(ctx, ['description'], values.description)
    : missing(ctx, ['description'], 'a one-line summary of when to use the agent');
  const blocks = blockRefContext(ctx, positions);
  const instructions = read('instructions', (value) => readInstructions(blocks, value), undefined);
  if (isSet(values.instructions) && split.body !== '') {
    problems.error(
      'invalid_field',
      'Expected either `instructions` (a prompt block) or a Markdown body, found both; move the body into the block or remove `instructions`',
      data.keyAt(['instructions']),
      ['instructions'],
    );
  }
  const settingsRefs = read('settings', (value) => readSettingsRefs(blocks, value), []);
  const modelSettings = read('modelSettings', (value) => readModelSettingsField(blocks, value), {
    settings: {},
    block: undefined,
  });
  if (split.body === '' && !isSet(values.instructions)) {
    problems.warning(
      'missing_field',
      'Expected a Markdown body (the system prompt) after the closing fence, found nothing',
      { line: split.bodyLine - 1, column: 1 },
    );
  }
  const tools = read('tools', (value) => readTools(refs, value), ALL_TOOLS);
  const definition: Omit<AgentDefinition, 'name' | 'description'> = {
    body: split.body,
    promptMode: read('promptMode', (value) => readEnum(ctx, ['promptMode'], value, PROMPT_MODES), 'extend'),
    tools: tools.kind === 'all' ? undefined : tools.names,
    disallowedTools: read('disallowedTools', (value) => readNames(ctx, 'disallowedTools', value, refs), []),
    permissionMode: read(
      'permissionMode',
      (value) => readEnum(ctx, ['permissionMode'], value, PERMISSION_MODES),
      'default',
    ),
    permissions: read('permissions', (value) => readPermissions(ctx, value), NO_PERMISSION_RULES),
    skills: read('skills', (value) => readNames(ctx, 'skills', value), []),
    agentsMd: read('agentsMd', (value) => readBoolean(ctx, ['agentsMd'], value), true),
    outputFormat: read(
      'outputFormat',
      (value) => readEnum(ctx, ['outputFormat'], value, OUTPUT_FORMATS),
      'default',
    ),
    bash: read('bash', (value) => readBash(ctx, value), DEFAULT_BASH),
    toolNameOverrides: read('toolNameOverrides', (value) => readToolNameOverrides(refs, value), {}),
    paramNameOverrides: read('paramNameOverrides', (value) => readParamNameOverrides(refs, value), {}),
    completionRequirement: read(
      'completionRequirement',
      (value) => readCompletionRequirement(ctx, value),
      undefined,
    ),
    toolConfig: read('toolConfig', (value) => readToolConfig(refs, value), {}),
    model: read('model', (value) => readModel(ctx, value), DEFAULT_MODEL),
    mcpServers: read('mcpServers', (value) => readMcpServers(refs, value), []),
    maxSteps: readMaxSteps(ctx, values) ?? DEFAULT_MAX_STEPS,
    enabled: read('enabled', (value) => readBoolean(ctx, ['enabled'], value), true),
    outputSchema: read('outputSchema', (value) => readOutputSchema(ctx, value), undefined),
    instructions,
    settings: settingsRefs,
    modelSettings: modelSettings.settings,
    modelSettingsBlock: modelSettings.block,
    source: target.source,
    path: target.path,
    extra: readExtra(ctx, values),
    bodyLine: split.bodyLine,
  };
  if (isSet(values.model)) positions.set('/model', data.valueAt(['model']));
  const sourcePositions = Object.fromEntries(positions);
  if (target.knownTools !== undefined) {
    const known: KnownTools =
      target.knownTools instanceof Set ? { names: target.knownTools } : (target.knownTools as KnownTools);
    problems.addAll(toolReferenceProblems({ ...definition, sourcePositions }, known));
  }
  if (problems.hasErrors || name === undefined || description === undefined) return undefined;
  return positions.size === 0
    ? { name, description, ...definition }
    : { name, description, ...definition, sourcePositions };
}

/** Where tool references were written: what the reference readers record into. */
interface References {
  readonly ctx: FieldContext;
  readonly split: FrontmatterSplit;
  readonly positions: Map<string, SourcePosition>;
}

/**
 * Records where each name of a name list was written: list items where they are, and items of a
 * comma-separated string (`tools: Read, Grep`) at their own line and column, also when the string
 * goes on over more lines (`tools: Read,` then `  Grep` indented below it). A name that cannot be
 * found as written (a quoted string with escapes) is placed at the string's start.
 */
function recordNamePositions(refs: References, key: string, value: unknown, names: readonly string[]): void {
  const { ctx, split, positions } = refs;
  if (Array.isArray(value)) {
    // Each name's first item, found in one pass: a search per name made a list of 20,000 tools
    // (within the frontmatter cap) take 400 million comparisons.
    const firstAt = new Map<string, number>();
    value.forEach((item, at) => {
      if (typeof item !== 'string') return;
      const trimmed = item.trim();
      if (!firstAt.has(trimmed)) firstAt.set(trimmed, at);
    });
    names.forEach((name, index) => {
      const at = firstAt.get(name);
      positions.set(jsonPointer([key, index]), ctx.data.valueAt(at === undefined ? [key] : [key, at]));
    });
    return;
  }
  const start = ctx.data.valueAt([key]);
  const lines = split.yaml.split('\n');
  const first = start.line - split.yamlLine;
  // The string ends where the next top-level key starts (or the frontmatter does).
  let end = first + 1;
  while (end < lines.length && !TOP_LEVEL_KEY.test(lines[end] ?? '')) end++;
  let line = first;
  let cursor = Math.max(0, start.column - 1 - (split.columnShifts[first] ?? 0));
  names.forEach((name, index) => {
    const found = findName(lines, name, line, cursor, end);
    if (found === undefined) {
      positions.set(jsonPointer([key, index]), start);
      return;
    }
    const shift = split.columnShifts[found.line] ?? 0;
    positions.set(jsonPointer([key, index]), {
      line: split.yamlLine + found.line,
      column: found.column + 1 + shift,
    });
    line = found.line;
    cursor = found.column + name.length;
  });
}

/** A top-level `key:` line of the frontmatter. */
const TOP_LEVEL_KEY = /^[A-Za-z_$][\w$.-]*[ \t]*:(?:[ \t]|$)/;
/** Characters that may stand next to a name in a comma-separated string. */
const NAME_BOUNDARY = /[\s,'"[\]>|]/;

/**
 * The first place at or after `line`:`column` (0-based, YAML lines before `end`) where `name` is
 * written as a whole item of a comma-separated string, not as part of a longer name.
 */
function findName(
  lines: readonly string[],
  name: string,
  line: number,
  column: number,
  end: number,
): { line: number; column: number } | undefined {
  for (let index = line; index < end; index++) {
    const text = lines[index] ?? '';
    let from = index === line ? column : 0;
    for (;;) {
      const found = text.indexOf(name, from);
      if (found === -1) break;
      const before = found === 0 ? ' ' : (text[found - 1] ?? ' ');
      const after = text[found + name.length] ?? ' ';
      if (NAME_BOUNDARY.test(before) && NAME_BOUNDARY.test(after)) return { line: index, column: found };
      from = found + 1;
    }
  }
  return undefined;
}

const ALL_TOOLS: NameList = { kind: 'all' };
const NO_PERMISSION_RULES: PermissionRules = { allow: [], ask: [], deny: [] };
const PERMISSION_LISTS = ['allow', 'ask', 'deny'] as const;

/**
 * `permissions: { allow, ask, deny }`: lists of rules in Claude Code's syntax. A rule that cannot be
 * read is an error at its own line and column (a deny or ask rule read wrongly would fail open).
 */
function readPermissions(ctx: FieldContext, value: unknown): PermissionRules | undefined {
  const object = readObject(ctx, ['permissions'], value);
  if (!object) return undefined;
  warnUnknownKeys(ctx, ['permissions'], object, [...PERMISSION_LISTS]);
  const lists: Record<(typeof PERMISSION_LISTS)[number], string[]> = { allow: [], ask: [], deny: [] };
  let failed = false;
  for (const key of PERMISSION_LISTS) {
    const items = object[key];
    if (!isSet(items)) continue;
    const path = ['permissions', key];
    // A list of rules, or one comma-separated string (as `tools` may be written).
    const entries: [text: unknown, at: PathSegment[]][] = Array.isArray(items)
      ? items.map((item: unknown, index) => [item, [...path, index]])
      : typeof items === 'string'
        ? items.split(',').map((item) => [item, path])
        : [];
    if (!Array.isArray(items) && typeof items !== 'string') {
      invalid(ctx, path, 'a list of rules such as `Bash(npm test:*)`', items);
      failed = true;
      continue;
    }
    for (const [text, at] of entries) {
      if (typeof text !== 'string' || text.trim() === '') {
        if (typeof text === 'string' && !Array.isArray(items)) continue;
        invalid(ctx, at, 'a rule such as `Bash(npm test:*)`', text);
        failed = true;
        continue;
      }
      const parsed = tryParseRule(text);
      if ('rule' in parsed) {
        if (!lists[key].includes(parsed.rule.raw)) lists[key].push(parsed.rule.raw);
        continue;
      }
      ctx.problems.error('invalid_tool_rule', parsed.error.message, ctx.data.valueAt(at), at);
      failed = true;
    }
  }
  return failed ? undefined : lists;
}
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

function readTools(refs: References, value: unknown): NameList | undefined {
  const list = readNameList(refs.ctx, ['tools'], value);
  if (list?.kind === 'names') {
    refs.positions.set('/tools', refs.ctx.data.keyAt(['tools']));
    recordNamePositions(refs, 'tools', value, list.names);
  }
  return list;
}

function readNames(
  ctx: FieldContext,
  key: 'disallowedTools' | 'skills',
  value: unknown,
  refs?: References,
): readonly string[] | undefined {
  const list = readNameList(ctx, [key], value);
  if (list?.kind === 'all') {
    invalid(ctx, [key], 'a list of names (`*` is only meaningful in `tools`)', value);
    return undefined;
  }
  if (list && refs) recordNamePositions(refs, key, value, list.names);
  return list?.names;
}

/** Records where a key naming a tool (`toolConfig.grep`) was written. */
function recordToolKey(refs: References, path: readonly PathSegment[]): void {
  refs.positions.set(jsonPointer(path), refs.ctx.data.keyAt(path));
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

function readToolNameOverrides(refs: References, value: unknown): Record<string, string> | undefined {
  const { ctx } = refs;
  const object = readObject(ctx, ['toolNameOverrides'], value);
  if (!object) return undefined;
  const entries: [string, string][] = [];
  const byFacingName = new Map<string, string>();
  for (const [tool, facing] of Object.entries(object)) {
    const path = ['toolNameOverrides', tool];
    recordToolKey(refs, path);
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
  refs: References,
  value: unknown,
): Record<string, Record<string, string>> | undefined {
  const { ctx } = refs;
  const object = readObject(ctx, ['paramNameOverrides'], value);
  if (!object) return undefined;
  const entries: [string, Record<string, string>][] = [];
  for (const [tool, params] of Object.entries(object)) {
    const path = ['paramNameOverrides', tool];
    recordToolKey(refs, path);
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
    ? readNumber(ctx, ['bash', 'timeoutSecs'], object.timeoutSecs, BASH_TIMEOUT_SECS_RANGE)
    : DEFAULT_BASH.timeoutSecs;
  const outputByteLimit = isSet(object.outputByteLimit)
    ? readNumber(ctx, ['bash', 'outputByteLimit'], object.outputByteLimit, BASH_OUTPUT_BYTE_LIMIT_RANGE)
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

function readToolConfig(refs: References, value: unknown): Record<string, ToolConfig> | undefined {
  const { ctx } = refs;
  const object = readObject(ctx, ['toolConfig'], value);
  if (!object) return undefined;
  const entries: [string, ToolConfig][] = [];
  for (const [tool, config] of Object.entries(object)) {
    const path = ['toolConfig', tool];
    recordToolKey(refs, path);
    const settings = readObject(ctx, path, config);
    if (!settings) continue;
    warnUnknownKeys(ctx, path, settings, ['retry', 'timeoutMs']);
    const timeoutMs = readToolTimeout(ctx, tool, [...path, 'timeoutMs'], settings.timeoutMs);
    if (timeoutMs === null) continue;
    const timed = timeoutMs === undefined ? {} : { timeoutMs };
    // Only a written `retry` is kept: for wait_for_instruction its presence bounds the wait, and an
    // entry without one (`wait_for_instruction: {}`) must leave it unbounded, not ~250 ms.
    if (settings.retry === undefined) {
      entries.push([tool, timed]);
      continue;
    }
    if (NEVER_RETRIED_TOOL_NAMES.has(tool)) {
      const effect = tool === SPAWN_AGENT ? 'start a second subagent' : 'send its instruction twice';
      invalid(
        ctx,
        [...path, 'retry'],
        `absent: a retry of \`${tool}\` whose answer was lost could ${effect} (the supervisor may have done the first); its time limit is \`timeoutMs\``,
        settings.retry,
      );
      continue;
    }
    const retry = readRetryPolicy(ctx, [...path, 'retry'], settings.retry, DEFAULT_TOOL_RETRY);
    if (retry) entries.push([tool, { retry, ...timed }]);
  }
  return Object.fromEntries(entries);
}

/**
 * `toolConfig.<tool>.timeoutMs`: an integer from 0 (no limit) to the longest timer delay; undefined
 * when not written, null (the problem recorded) when wrong.
 */
function readToolTimeout(
  ctx: FieldContext,
  tool: string,
  path: readonly PathSegment[],
  value: unknown,
): number | undefined | null {
  if (!isSet(value)) return undefined;
  if (tool === WAIT_FOR_INSTRUCTION_TOOL) {
    invalid(ctx, path, 'absent: the wait of `wait_for_instruction` is bounded by its `retry`', value);
    return null;
  }
  return readNumber(ctx, path, value, TOOL_TIMEOUT_MS_RANGE) ?? null;
}

/**
 * Claude Code's `mcpServers`: a list whose items are the name of a configured server or a
 * one-key map `{ name: settings }`; a `{ name: settings }` map (as in `.mcp.json`) is read too.
 */
function readMcpServers(refs: References, value: unknown): McpServerRef[] | undefined {
  const { ctx } = refs;
  const entries: [name: unknown, settings: unknown, path: PathSegment[]][] = [];
  if (Array.isArray(value)) {
    value.forEach((item: unknown, index) => {
      if (typeof item === 'string') entries.push([item.trim(), undefined, ['mcpServers', index]]);
      else if (isPlainObject(item) && Object.keys(item).length === 1) {
        const [name, settings] = Object.entries(item)[0] ?? [];
        entries.push([name, settings, ['mcpServers', index, name ?? '']]);
      } else {
        invalid(ctx, ['mcpServers', index], 'a server name or `{ name: { command | url ... } }`', item);
      }
    });
  } else if (isPlainObject(value)) {
    for (const [name, settings] of Object.entries(value))
      entries.push([name, settings, ['mcpServers', name]]);
  } else {
    invalid(ctx, ['mcpServers'], 'a list of server names or server settings', value);
    return undefined;
  }
  const servers: McpServerRef[] = [];
  let failed = false;
  for (const [name, settings, path] of entries) {
    if (typeof name !== 'string' || !isMcpServerName(name)) {
      invalid(ctx, path, 'an MCP server name of letters, digits, `_` or `-`', name);
      failed = true;
      continue;
    }
    refs.positions.set(jsonPointer(['mcpServers', servers.length]), ctx.data.keyAt(path));
    if (settings === undefined) {
      servers.push(name);
      continue;
    }
    const read = readMcpServerConfig(settings);
    if ('problem' in read) {
      const at = [...path, ...read.problem.path];
      ctx.problems.error('invalid_field', read.problem.message, ctx.data.valueAt(at), at);
      failed = true;
      continue;
    }
    // A server of the definition's own marked `disabled: true` is left out, as in `.mcp.json`.
    if ('config' in read) servers.push({ name, config: read.config });
  }
  return failed ? undefined : servers;
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
  const steps = readNumber(ctx, [key], values[key], MAX_STEPS_RANGE);
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
