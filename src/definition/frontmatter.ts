/**
 * Splits a definition file into its YAML frontmatter and Markdown body, keeping enough bookkeeping
 * to map every position in the YAML back to a line and column of the original file.
 */
import { MAX_FRONTMATTER_CHARS } from './constants.ts';
import type { ProblemList } from './problems.ts';
import type { SourcePosition } from './types.ts';

/** `strict` for troupe's own dirs; `lenient` for compat sources (Claude Code files in the wild). */
export type ParseMode = 'strict' | 'lenient';

/** The two parts of a definition file. */
export interface FrontmatterSplit {
  /** The YAML between the fences, `\n`-separated, with any lenient indentation removed. */
  readonly yaml: string;
  /** 1-based line of the original file holding the first YAML line. */
  readonly yamlLine: number;
  /** Per YAML line: how many columns were removed from its start (non-zero only when dedented). */
  readonly columnShifts: readonly number[];
  /** The Markdown body: leading blank lines and trailing whitespace removed. */
  readonly body: string;
  /** 1-based line where the body starts. */
  readonly bodyLine: number;
}

const OPENING_FENCE = /^---[ \t]*$/;
const INDENTED_OPENING_FENCE = /^([ \t]+)---[ \t]*$/;
/** Any run of 3+ dashes is a closing-fence candidate; only `---` itself is accepted in strict mode. */
const DASH_LINE = /^(-{3,})[ \t]*$/;
const BLANK = /^[ \t]*$/;

/** Normalises the text the way positions are computed: no BOM, `\n` line ends. */
export function normalizeSource(text: string): string {
  return (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).replaceAll('\r\n', '\n');
}

/**
 * Finds the frontmatter of `text` (already normalised). Leading blank lines are allowed; the first
 * line of dashes after the opening fence closes the frontmatter, so `---` lines and fenced
 * frontmatter examples in the body never matter. Records a `parse_error` and returns undefined
 * when there is no usable frontmatter.
 */
export function splitFrontmatter(
  text: string,
  mode: ParseMode,
  problems: ProblemList,
): FrontmatterSplit | undefined {
  const lines = text.split('\n');
  const open = lines.findIndex((line) => !BLANK.test(line));
  const opening = open === -1 ? undefined : lines[open];
  if (opening === undefined) {
    problems.error(
      'parse_error',
      'Expected a `---` frontmatter line at the start of the file, found an empty file',
      { line: 1, column: 1 },
    );
    return undefined;
  }
  const indent = openingIndent(opening, mode, open, problems);
  if (indent === undefined) return undefined;

  const close = findClosingFence(lines, open, indent, mode, problems);
  if (close === undefined) return undefined;

  const yamlLines: string[] = [];
  const columnShifts: number[] = [];
  for (const line of lines.slice(open + 1, close)) {
    const removed = dedentWidth(line, indent);
    yamlLines.push(line.slice(removed));
    columnShifts.push(removed);
  }
  const yaml = yamlLines.join('\n');
  if (yaml.length > MAX_FRONTMATTER_CHARS) {
    problems.error(
      'parse_error',
      `Expected a frontmatter of at most ${MAX_FRONTMATTER_CHARS} characters, found ${yaml.length}; ` +
        'long text belongs in the body',
      { line: open + 1, column: indent + 1 },
    );
    return undefined;
  }
  const bodyLines = lines.slice(close + 1).map((line) => line.slice(dedentWidth(line, indent)));
  const leadingBlank = bodyLines.findIndex((line) => !BLANK.test(line));
  const skipped = leadingBlank === -1 ? bodyLines.length : leadingBlank;
  return {
    yaml,
    yamlLine: open + 2,
    columnShifts,
    body: bodyLines.slice(skipped).join('\n').trimEnd(),
    bodyLine: close + 2 + (leadingBlank === -1 ? 0 : skipped),
  };
}

/** Width of the opening fence's indentation, or undefined (after recording why) when it is no fence. */
function openingIndent(
  opening: string,
  mode: ParseMode,
  index: number,
  problems: ProblemList,
): number | undefined {
  if (OPENING_FENCE.test(opening)) return 0;
  const at: SourcePosition = { line: index + 1, column: 1 };
  const indented = INDENTED_OPENING_FENCE.exec(opening)?.[1];
  if (indented !== undefined && mode === 'lenient') {
    problems.warning(
      'lenient_parse',
      `Expected the frontmatter fence \`---\` at column 1, found it indented by ${indented.length} columns; ` +
        'read the indented file as if it were not indented',
      { line: index + 1, column: indented.length + 1 },
    );
    return indented.length;
  }
  if (indented !== undefined) {
    problems.error(
      'parse_error',
      `Expected the frontmatter fence \`---\` at column 1, found it indented by ${indented.length} columns`,
      { line: index + 1, column: indented.length + 1 },
    );
    return undefined;
  }
  problems.error(
    'parse_error',
    `Expected the file to start with a \`---\` frontmatter line, found ${quoteLine(opening)}`,
    at,
  );
  return undefined;
}

function findClosingFence(
  lines: readonly string[],
  open: number,
  indent: number,
  mode: ParseMode,
  problems: ProblemList,
): number | undefined {
  for (let index = open + 1; index < lines.length; index++) {
    const line = lines[index] ?? '';
    const removed = dedentWidth(line, indent);
    const dashes = DASH_LINE.exec(line.slice(removed))?.[1];
    if (dashes === undefined || removed !== indent) continue;
    if (dashes.length === 3) return index;
    const at = { line: index + 1, column: removed + 1 };
    if (mode === 'lenient') {
      problems.warning(
        'lenient_parse',
        `Expected the closing fence \`---\`, found a line of ${dashes.length} dashes; accepted it as the closing fence`,
        at,
      );
      return index;
    }
    problems.error(
      'parse_error',
      `Expected the closing fence \`---\`, found a line of ${dashes.length} dashes`,
      at,
    );
    return undefined;
  }
  problems.error(
    'parse_error',
    'Expected a closing `---` line for the frontmatter opened here, found none before the end of the file',
    { line: open + 1, column: indent + 1 },
  );
  return undefined;
}

/** How many leading columns of `line` belong to the frontmatter's indentation. */
function dedentWidth(line: string, indent: number): number {
  let width = 0;
  while (width < indent && (line[width] === ' ' || line[width] === '\t')) width++;
  return width;
}

function quoteLine(line: string): string {
  const trimmed = line.trim();
  return `\`${trimmed.length > 50 ? `${trimmed.slice(0, 47)}...` : trimmed}\``;
}
