/**
 * Strict YAML reading of the frontmatter with the `yaml` package, and the fall-back to the lenient
 * line reader for compat sources. YAML syntax errors are reported at the line and column of the
 * original file, with the common Claude Code mistakes explained.
 */
import type { Document, ErrorCode, LineCounter } from 'yaml';
import { describeValue } from '../errors.ts';
import { MAX_YAML_ERRORS } from './constants.ts';
import type { FrontmatterSplit, ParseMode } from './frontmatter.ts';
import { type FrontmatterData, YamlNodeLocator, YamlPositions } from './frontmatter-data.ts';
import { readLenientFrontmatter } from './lenient.ts';
import type { ProblemList } from './problems.ts';
import type { SourcePosition } from './types.ts';
import { readYaml, unclosedLocator, type YamlRead } from './yaml-read.ts';

/**
 * Reads the frontmatter of `split`. Strict mode reports every YAML error and returns undefined;
 * lenient mode falls back to reading top-level `key: value` lines with a `lenient_parse` warning.
 * `subject` names the text in messages (`Invalid YAML in frontmatter: ...`; a block's settings
 * file is all YAML, no frontmatter).
 */
export function readFrontmatter(
  split: FrontmatterSplit,
  mode: ParseMode,
  problems: ProblemList,
  subject = 'frontmatter',
): FrontmatterData | undefined {
  // The opening `---` line; a file that is all YAML (a settings block) has none, so its first line.
  const fence: SourcePosition = { line: Math.max(split.yamlLine - 1, 1), column: 1 };
  const positions = (lineCounter: LineCounter) => new YamlPositions(split, lineCounter);
  const read = readYaml(split.yaml, subject);
  const failures = read.ok
    ? notAMapping(read.value, read.doc, positions(read.lineCounter), fence, subject)
    : describeFailures(read, split.yaml, positions(read.lineCounter), fence, subject);

  if (read.ok && failures.length === 0) {
    const locator = new YamlNodeLocator(read.doc.contents, positions(read.lineCounter), fence);
    const values = (read.value ?? {}) as Record<string, unknown>;
    return { values, keyAt: (path) => locator.keyAt(path), valueAt: (path) => locator.valueAt(path) };
  }
  const first = failures[0];
  if (mode === 'strict' || first === undefined) {
    for (const failure of failures) problems.error('parse_error', failure.message, failure.at);
    return undefined;
  }
  const lenient = readLenientFrontmatter(split, problems);
  if (lenient === undefined) {
    for (const failure of failures) problems.error('parse_error', failure.message, failure.at);
    return undefined;
  }
  problems.warning(
    'lenient_parse',
    `${first.message}. Read the top-level \`key: value\` lines as plain strings instead (lenient mode)`,
    first.at,
  );
  return lenient;
}

interface Failure {
  readonly message: string;
  readonly at: SourcePosition;
}

function notAMapping(
  value: unknown,
  doc: Document,
  positions: YamlPositions,
  fence: SourcePosition,
  subject: string,
): Failure[] {
  if (value === null || value === undefined) return [];
  if (typeof value === 'object' && !Array.isArray(value)) return [];
  const offset = doc.contents?.range?.[0];
  const found = Array.isArray(value) ? 'a list' : `a single value ${describeValue(value)}`;
  return [
    {
      message: `Expected the ${subject} to be \`key: value\` lines, found ${found}`,
      at: offset === undefined ? fence : positions.at(offset),
    },
  ];
}

function describeFailures(
  read: Extract<YamlRead, { ok: false }>,
  yaml: string,
  positions: YamlPositions,
  fence: SourcePosition,
  subject: string,
): Failure[] {
  const errors = read.doc?.errors ?? [];
  if (errors.length === 0) {
    const refusal = read.refusal ?? { message: `Invalid YAML in ${subject}`, offset: 0 };
    return [{ message: refusal.message, at: refusal.offset === 0 ? fence : positions.at(refusal.offset) }];
  }
  // One slip inside an entry makes the parser report a cascade of errors for the rest of that
  // entry; the first one says it all, so each top-level entry gets at most one.
  const entryStarts = topLevelLineStarts(yaml);
  const seenEntries = new Set<number>();
  const failures: Failure[] = [];
  const opening = unclosedLocator(yaml);
  for (const error of errors) {
    if (failures.length === MAX_YAML_ERRORS) break;
    const opened = opening(error);
    if (opened !== undefined) {
      const entry = lastIndexAtOrBefore(entryStarts, opened);
      if (seenEntries.has(entry)) continue;
      seenEntries.add(entry);
      failures.push({ message: unclosedMessage(yaml[opened] ?? '', subject), at: positions.at(opened) });
      continue;
    }
    const offset = Math.min(Math.max(error.pos[0], 0), yaml.length);
    const entry = lastIndexAtOrBefore(entryStarts, offset);
    if (seenEntries.has(entry)) continue;
    seenEntries.add(entry);
    const entryEnd = entryStarts[entry + 1] ?? yaml.length;
    const { message, offset: culprit } = explainYamlError(
      error.code,
      error.message,
      yaml,
      offset,
      entryEnd,
      subject,
    );
    failures.push({ message, at: positions.at(culprit) });
  }
  return failures;
}

function unclosedMessage(opener: string, subject: string): string {
  const closer = opener === '[' ? ']' : opener === '{' ? '}' : opener;
  const hint =
    opener === '[' || opener === '{' ? `; quote the value if the \`${opener}\` is part of the text` : '';
  return `Invalid YAML in ${subject}: expected a \`${closer}\` to close the \`${opener}\` that opens here, found none${hint}`;
}

/** Offsets of the lines that start a top-level entry (content at column 1, not a comment). */
function topLevelLineStarts(yaml: string): number[] {
  const starts: number[] = [];
  let lineStart = 0;
  while (lineStart <= yaml.length) {
    const char = yaml[lineStart];
    if (char !== undefined && char !== ' ' && char !== '\t' && char !== '\n' && char !== '#')
      starts.push(lineStart);
    const next = yaml.indexOf('\n', lineStart);
    if (next === -1) break;
    lineStart = next + 1;
  }
  return starts;
}

/** Index of the last element of the ascending `values` that is <= `target`, or -1. */
function lastIndexAtOrBefore(values: readonly number[], target: number): number {
  let low = 0;
  let high = values.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((values[middle] ?? 0) <= target) low = middle + 1;
    else high = middle;
  }
  return low - 1;
}

const ALIAS_LIKE_START = /^[*&!%@`]/;
/** A `:` that YAML would read as a key separator inside a plain value. */
const KEY_SEPARATOR = /:(?=[ \t\n]|$)/;
const KEY_BEFORE_VALUE = /^[ \t]*([^\s:#][^:]*?)[ \t]*:[ \t]*$/;

/**
 * Turns a YAML error into a message that says what was expected and what was found, located at the
 * culprit: the `: ` inside a plain value rather than the value's first character.
 * @param start offset of the error; @param entryEnd end of the top-level entry holding it.
 */
export function explainYamlError(
  code: ErrorCode,
  yamlMessage: string,
  yaml: string,
  start: number,
  entryEnd: number,
  subject = 'frontmatter',
): { message: string; offset: number } {
  const lineStart = yaml.lastIndexOf('\n', start - 1) + 1;
  const key = KEY_BEFORE_VALUE.exec(yaml.slice(lineStart, start))?.[1];
  const entry = yaml.slice(start, Math.max(start, entryEnd));

  if (key !== undefined && ALIAS_LIKE_START.test(entry)) {
    const value = entry.split('\n', 1)[0] ?? '';
    return {
      message:
        `Invalid YAML in ${subject}: expected a value for \`${key}\`, found ${quoteSnippet(value)}, ` +
        `which YAML reads as ${entry.startsWith('*') ? 'an alias' : 'a tag or reserved indicator'}; quote the value`,
      offset: start,
    };
  }
  if (key !== undefined && (code === 'BLOCK_AS_IMPLICIT_KEY' || code === 'MULTILINE_IMPLICIT_KEY')) {
    const separator = KEY_SEPARATOR.exec(entry);
    if (separator) {
      return {
        message:
          `Invalid YAML in ${subject}: expected a plain text value for \`${key}\`, found \`: \` inside it, ` +
          `which YAML reads as a nested key; quote the value or use a block scalar (\`${key}: |\`)`,
        offset: start + separator.index,
      };
    }
  }
  if (start === lineStart && code === 'MULTILINE_IMPLICIT_KEY') {
    const lineEnd = yaml.indexOf('\n', lineStart);
    return {
      message:
        `Invalid YAML in ${subject}: expected a \`key: value\` line, found ${quoteSnippet(yaml.slice(lineStart, lineEnd === -1 ? undefined : lineEnd))}; ` +
        'indent the continuation lines of a multi-line value',
      offset: start,
    };
  }
  return { message: `Invalid YAML in ${subject}: ${yamlMessage}`, offset: start };
}

function quoteSnippet(text: string): string {
  const trimmed = text.trim();
  return `\`${trimmed.length > 40 ? `${trimmed.slice(0, 37)}...` : trimmed}\``;
}
