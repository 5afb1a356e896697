/**
 * The lenient frontmatter reader for compat sources, used only after strict YAML has failed.
 *
 * It cuts the frontmatter into top-level entries: a `key:` line at column 1 plus every following
 * line that is not one (indented lines, blank lines, and the column-1 continuation lines some
 * hand-edited files have). Each entry is tried as YAML on its own, so the well-formed entries keep
 * their lists and numbers; an entry YAML rejects (`description: Use when: ...`, `tools: *`) is read
 * as a plain string, exactly as written.
 */
import { DISPLAY_KEYS, KNOWN_KEYS } from './constants.ts';
import type { FrontmatterSplit } from './frontmatter.ts';
import { type FrontmatterData, YamlNodeLocator, YamlPositions } from './frontmatter-data.ts';
import type { PathSegment, ProblemList } from './problems.ts';
import type { SourcePosition } from './types.ts';
import { readYaml } from './yaml-read.ts';

const KEY_LINE = /^()([A-Za-z_$][\w$.-]*)[ \t]*:(?:[ \t]+|$)/;
/** A `key:` line indented with a tab (YAML forbids tabs as indentation). */
const TAB_KEY_LINE = /^([ \t]*\t[ \t]*)([A-Za-z_$][\w$.-]*)[ \t]*:(?:[ \t]+|$)/;
const LEADING_WHITESPACE = /^[ \t]*/;
const COMMENT_LINE = /^#/;
const BLOCK_SCALAR_HEADER = /^[|>][+-]?[1-9]?[+-]?$/;

interface Entry {
  readonly key: string;
  /** 0-based index of the `key:` line among the YAML lines. */
  readonly first: number;
  /** Index after the entry's last line. */
  end: number;
  /** Width of the indentation before the key (only a tab-indented key has one). */
  readonly indent: number;
  /** Width of `key: ` on the first line, indentation included. */
  readonly prefix: number;
}

interface ReadEntry {
  readonly value: unknown;
  readonly key: SourcePosition;
  readonly keyAt: (path: readonly PathSegment[]) => SourcePosition;
  readonly valueAt: (path: readonly PathSegment[]) => SourcePosition;
}

/**
 * Reads `split.yaml` line by line. Returns undefined when no `key: value` line is found at all (the
 * caller then reports the strict YAML error instead).
 */
export function readLenientFrontmatter(
  split: FrontmatterSplit,
  problems: ProblemList,
): FrontmatterData | undefined {
  const lines = split.yaml.split('\n');
  const entries = cutEntries(lines);
  if (entries.length === 0) return undefined;

  const fence: SourcePosition = { line: split.yamlLine - 1, column: 1 };
  const read = new Map<string, ReadEntry>();
  for (const entry of entries) {
    const keyAt = positionOf(split, entry.first, entry.indent);
    if (entry.indent > 0) {
      problems.warning(
        'lenient_parse',
        `Expected \`${entry.key}\` at the start of its line, found it indented with a tab; read it as a top-level key`,
        keyAt,
        [entry.key],
      );
    }
    const earlier = read.get(entry.key);
    if (earlier) {
      problems.warning(
        'lenient_parse',
        `Expected each key once, found \`${entry.key}\` again (first at line ${earlier.key.line}); kept the first`,
        keyAt,
        [entry.key],
      );
      continue;
    }
    read.set(entry.key, readEntry(split, lines, entry, keyAt));
  }

  const values = Object.fromEntries([...read].map(([key, entry]) => [key, entry.value]));
  return {
    values,
    keyAt: (path) => {
      const [top] = path;
      const entry = top === undefined ? undefined : read.get(String(top));
      if (!entry) return fence;
      return entry.keyAt(path);
    },
    valueAt: (path) => {
      const [top] = path;
      const entry = top === undefined ? undefined : read.get(String(top));
      return entry ? entry.valueAt(path) : fence;
    },
  };
}

/**
 * Cuts the lines into entries. A tab-indented line that names a key troupe knows (`\tdescription:`,
 * a hand-edited file's slip) starts an entry too, when the entry before it has its value on its
 * own line (`name: x`): there it cannot be nested content, and read as a continuation it would
 * turn two keys into one strange value.
 */
function cutEntries(lines: readonly string[]): Entry[] {
  const entries: Entry[] = [];
  let current: Entry | undefined;
  let inlineValue = false;
  lines.forEach((line, index) => {
    let match = KEY_LINE.exec(line);
    if (!match && current && inlineValue) {
      const tabbed = TAB_KEY_LINE.exec(line);
      const key = tabbed?.[2];
      if (key !== undefined && (KNOWN_KEYS.has(key) || DISPLAY_KEYS.has(key))) match = tabbed;
    }
    const key = match?.[2];
    if (match && key !== undefined) {
      if (current) current.end = index;
      const indent = match[1]?.length ?? 0;
      current = { key, first: index, end: lines.length, indent, prefix: match[0].length };
      entries.push(current);
      const head = line.slice(current.prefix).trim();
      inlineValue = head !== '' && !head.startsWith('#') && !BLOCK_SCALAR_HEADER.test(head);
    }
  });
  return entries;
}

function readEntry(
  split: FrontmatterSplit,
  lines: readonly string[],
  entry: Entry,
  keyAt: SourcePosition,
): ReadEntry {
  const { text, shifted } = entryText(split, lines, entry);
  const yaml = readYaml(text);
  const parsed = yaml.ok ? singleEntryValue(yaml.value, entry.key) : undefined;
  if (yaml.ok && parsed) {
    const locator = new YamlNodeLocator(
      yaml.doc.contents,
      new YamlPositions(shifted, yaml.lineCounter, entry.first),
      keyAt,
    );
    return {
      value: parsed.value,
      key: keyAt,
      keyAt: (path) => locator.keyAt(path),
      valueAt: (path) => locator.valueAt(path),
    };
  }
  const { value, line, column } = plainValue(lines, entry);
  const valueAt = positionOf(split, line, column);
  return {
    value,
    key: keyAt,
    keyAt: (path) => (path.length === 1 ? keyAt : valueAt),
    valueAt: () => valueAt,
  };
}

/**
 * The entry's lines as YAML to parse on its own: the key's own indentation removed, and each tab in
 * the indentation of the lines after it read as two spaces (YAML forbids tabs there; `\t- Read`
 * under `tools:` is a list item to whoever wrote it). `shifted` is `split` with its column shifts
 * corrected for those lines, so positions still point into the file.
 */
function entryText(
  split: FrontmatterSplit,
  lines: readonly string[],
  entry: Entry,
): { text: string; shifted: FrontmatterSplit } {
  const own = trimTrailingBlankLines(lines.slice(entry.first, entry.end));
  let shifts: number[] | undefined;
  const shift = (index: number, by: number): void => {
    shifts ??= [...split.columnShifts];
    shifts[entry.first + index] = (split.columnShifts[entry.first + index] ?? 0) + by;
  };
  const text = own
    .map((line, index) => {
      if (index === 0) {
        if (entry.indent > 0) shift(0, entry.indent);
        return line.slice(entry.indent);
      }
      const indentation = LEADING_WHITESPACE.exec(line)?.[0] ?? '';
      if (!indentation.includes('\t')) return line;
      const spaces = indentation.replaceAll('\t', '  ');
      shift(index, indentation.length - spaces.length);
      return spaces + line.slice(indentation.length);
    })
    .join('\n');
  return { text, shifted: shifts === undefined ? split : { ...split, columnShifts: shifts } };
}

/** The value of `key` when `value` is exactly `{ [key]: something }`. */
function singleEntryValue(value: unknown, key: string): { value: unknown } | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== key) return undefined;
  return { value: (value as Record<string, unknown>)[key] };
}

/**
 * The entry's text as one string: the rest of the `key:` line, then the continuation lines with
 * the common indentation of the indented ones removed (comment lines at column 1 dropped), joined
 * by newlines.
 */
function plainValue(lines: readonly string[], entry: Entry): { value: string; line: number; column: number } {
  const head = (lines[entry.first] ?? '').slice(entry.prefix).trim();
  const rest = trimTrailingBlankLines(
    lines.slice(entry.first + 1, entry.end).filter((line) => !COMMENT_LINE.test(line)),
  );
  // Column-1 continuation lines do not count: they would cancel the dedent of the indented ones.
  const indentOf = (line: string) => line.length - line.trimStart().length;
  const indents = rest.filter((line) => line.trim() !== '' && indentOf(line) > 0).map(indentOf);
  const common = indents.length === 0 ? 0 : indents.reduce((a, b) => Math.min(a, b));
  const continuation = rest.map((line) => line.slice(Math.min(common, indentOf(line))).trimEnd());
  const first = BLOCK_SCALAR_HEADER.test(head) ? '' : head;
  const value = (first === '' ? continuation : [first, ...continuation]).join('\n').trim();
  if (first !== '' || continuation.length === 0) return { value, line: entry.first, column: entry.prefix };
  const firstContent = lines.findIndex((line, index) => index > entry.first && line.trim() !== '');
  return { value, line: firstContent === -1 ? entry.first : firstContent, column: common };
}

function trimTrailingBlankLines(lines: readonly string[]): string[] {
  let end = lines.length;
  while (end > 0 && (lines[end - 1] ?? '').trim() === '') end--;
  return lines.slice(0, end);
}

/** Original-file position of a 0-based YAML line and 0-based column. */
function positionOf(split: FrontmatterSplit, yamlLine: number, column: number): SourcePosition {
  return { line: split.yamlLine + yamlLine, column: column + 1 + (split.columnShifts[yamlLine] ?? 0) };
}
