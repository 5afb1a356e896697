/**
 * The simulated model's reasoning, as pure functions of what it is shown: which files a task
 * names, how many instructions it should wait for, how far it has got, and how to fill a tool's
 * arguments from its JSON Schema.
 */
import type { JsonSchema } from '../tools/types.ts';
import { asArray, asRecord, asString } from './json-shapes.ts';

const FILE_EXTENSIONS =
  'md|markdown|txt|ts|tsx|js|jsx|mjs|cjs|json|jsonl|yaml|yml|toml|ini|cfg|conf|py|rb|go|rs|java|kt|c|h|cc|cpp|hpp|cs|php|swift|sh|sql|css|scss|html|xml|csv|log|env';
const FILE_NAME = new RegExp(
  `(?:^|[\\s\`'"(\\[])((?:\\.{1,2}/|/)?[\\w.@-]+(?:/[\\w.@-]+)*\\.(?:${FILE_EXTENSIONS}))(?=$|[\\s\`'"),:;!?\\]]|\\.(?:\\s|$))`,
  'gim',
);
const WAIT_REQUEST =
  /\bwait(?:ing)?\s+for\s+(?:(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+)?(?:further\s+|more\s+|new\s+|an?\s+|the\s+next\s+)?instructions?\b|\bwait_for_instruction\b/i;
const NUMBER_WORDS: Readonly<Record<string, number>> = {
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
};
const TEXT_FIELD = /summary|result|answer|text|message|description|reason|content|output|report|note/i;
const PATH_FIELD = /path|file/i;
const MAX_SCHEMA_DEPTH = 4;

/** File paths named in `text`, in order of first mention, at most `max`. */
export function findFileNames(text: string, max: number): string[] {
  const found = new Set<string>();
  for (const match of text.matchAll(FILE_NAME)) {
    const name = match[1];
    if (name === undefined || name.includes('://')) continue;
    found.add(name);
    if (found.size >= max) break;
  }
  return [...found];
}

/** How many instructions `text` asks to wait for: 0 when it does not ask. */
export function requestedWaits(text: string): number {
  const match = WAIT_REQUEST.exec(text);
  if (match === null) return 0;
  const count = match[1]?.toLowerCase();
  if (count === undefined) return 1;
  return NUMBER_WORDS[count] ?? Math.max(1, Number.parseInt(count, 10));
}

/** Where the input's history begins: the first line starting with one of `markers`. */
export function historyStart(input: string, markers: readonly string[]): number {
  let start = input.length;
  for (const marker of markers) {
    const index = input.startsWith(marker) ? 0 : input.indexOf(`\n${marker}`);
    if (index >= 0 && index < start) start = index;
  }
  return start;
}

/** Lines of `input` that start with `marker`: the tool results an earlier round rendered. */
export function countLinesStartingWith(input: string, marker: string): number {
  let count = input.startsWith(marker) ? 1 : 0;
  const needle = `\n${marker}`;
  for (let index = input.indexOf(needle); index >= 0; index = input.indexOf(needle, index + needle.length))
    count += 1;
  return count;
}

/** The first line of `text`, cut to `max` characters with `…`, as the CLI's displays cut text. */
function firstLine(text: string, max: number): string {
  const line = text.trim().split('\n', 1)[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * How an answer names what it was asked: `Task: <its first line>`, then `context: <its first line>`
 * when the input holds context sections before the task. `opening` is the input before its
 * history (context sections, then the task); `task` is the task as given, when the caller said.
 * Without it the opening is taken for the task.
 */
export function describeAsk(opening: string, task: string | undefined): string {
  const trimmed = task?.trim();
  const end = trimmed === undefined || trimmed === '' ? -1 : opening.lastIndexOf(trimmed);
  if (trimmed === undefined || end < 0) return `Task: ${firstLine(opening, 80) || '(none)'}`;
  const context = firstLine(opening.slice(0, end), 80);
  return `Task: ${firstLine(trimmed, 80)}${context === '' ? '' : `; context: ${context}`}`;
}

/** What the model has seen, used to fill arguments. */
export interface Facts {
  readonly summary: string;
  readonly files: readonly string[];
  /** The file a path-like argument should name. */
  readonly file: string | undefined;
  readonly instructions: readonly string[];
}

/** Arguments for a tool whose parameters are `schema`: required fields plus the ones it knows. */
export function argumentsFromSchema(schema: JsonSchema, facts: Facts): Record<string, unknown> {
  const value = valueFor(schema, '', facts, 0);
  return asRecord(value) ?? { summary: facts.summary };
}

function schemaType(schema: Record<string, unknown>): string | undefined {
  const type = schema.type;
  if (Array.isArray(type)) return asString(type.find((item) => item !== 'null'));
  if (type === undefined && asRecord(schema.properties) !== undefined) return 'object';
  return asString(type);
}

function valueFor(schema: Record<string, unknown>, name: string, facts: Facts, depth: number): unknown {
  if (schema.const !== undefined) return schema.const;
  const options = asArray(schema.enum);
  if (options.length > 0) return options[0];
  switch (schemaType(schema)) {
    case 'object':
      return objectFor(schema, facts, depth);
    case 'array': {
      const items = asRecord(schema.items) ?? {};
      if (PATH_FIELD.test(name) && schemaType(items) === 'string') return [...facts.files];
      if (/instruction/i.test(name)) return [...facts.instructions];
      const minItems = typeof schema.minItems === 'number' ? schema.minItems : 0;
      return Array.from({ length: minItems }, () => valueFor(items, name, facts, depth + 1));
    }
    case 'integer':
    case 'number':
      if (/count|files/i.test(name)) return facts.files.length;
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'string':
      if (PATH_FIELD.test(name) && facts.file !== undefined) return facts.file;
      if (TEXT_FIELD.test(name) || name === '') return facts.summary;
      return 'simulated';
    default:
      return facts.summary;
  }
}

function objectFor(schema: Record<string, unknown>, facts: Facts, depth: number): Record<string, unknown> {
  const properties = asRecord(schema.properties);
  if (properties === undefined || Object.keys(properties).length === 0) {
    // A closed object with no properties (a tool that takes no arguments) accepts only `{}`.
    if (schema.additionalProperties === false) return {};
    return {
      summary: facts.summary,
      files: [...facts.files],
      instructions: [...facts.instructions],
      simulated: true,
    };
  }
  if (depth >= MAX_SCHEMA_DEPTH) return {};
  const required = new Set(
    asArray(schema.required).filter((item): item is string => typeof item === 'string'),
  );
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(properties)) {
    const known =
      key === 'simulated' || TEXT_FIELD.test(key) || (PATH_FIELD.test(key) && facts.file !== undefined);
    if (!required.has(key) && !known) continue;
    result[key] = valueFor(asRecord(value) ?? {}, key, facts, depth + 1);
  }
  return result;
}
