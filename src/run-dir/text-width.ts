/**
 * How many terminal columns text takes, for the live progress display (it moves the cursor back
 * over its last frame by rows, so it must know how many rows each line took) and the tables and
 * excerpts of every command. Text is measured and cut by grapheme (what a reader sees as one
 * character: a letter and its combining marks, an emoji ZWJ sequence, a flag): wide characters
 * (CJK, fullwidth forms, emoji) take two columns, combining marks and zero-width joiners none.
 */

/** SGR and other CSI sequences the display writes itself (colours): they take no column. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: measuring around escape sequences is the point
const CSI = /\u001b\[[0-?]*[ -/]*[@-~]/g;

/** Code points that take no column: combining marks, variation selectors (Mn too), zero-width spaces and joiners. */
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\u200b-\u200d\u2060\ufeff]$/u;

/** East Asian Wide and Fullwidth ranges, and emoji shown as emoji by default. */
const WIDE =
  /^[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff\ufe10-\ufe19\ufe30-\ufe6f\uff00-\uff60\uffe0-\uffe6\u{1f000}-\u{1faff}\u{20000}-\u{3fffd}]$/u;

function charWidth(char: string): number {
  if (ZERO_WIDTH.test(char)) return 0;
  if (WIDE.test(char) || /^\p{Emoji_Presentation}$/u.test(char)) return 2;
  return 1;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * Columns one grapheme takes: its first code point's, or two for an emoji made of several (a ZWJ
 * family, a flag's two regional indicators, a symbol with VS16), which terminals draw as one.
 */
function graphemeWidth(grapheme: string): number {
  const [first = '', ...rest] = grapheme;
  const width = charWidth(first);
  if (width === 0 || rest.length === 0) return width;
  return rest.includes('\ufe0f') || rest.includes('\u200d') || /^\p{Regional_Indicator}$/u.test(first)
    ? 2
    : width;
}

/** Columns `text` takes on one terminal line (escape sequences take none). */
export function displayWidth(text: string): number {
  let width = 0;
  for (const { segment } of graphemes.segment(text.replace(CSI, ''))) width += graphemeWidth(segment);
  return width;
}

/**
 * `text` cut to at most `width` columns, ending in `…` when cut; never inside a grapheme, so no
 * half of an emoji is left to show as a replacement character and no letter loses its accent.
 */
export function fitWidth(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  let out = '';
  let used = 0;
  for (const { segment } of graphemes.segment(text)) {
    const next = graphemeWidth(segment);
    if (used + next > width - 1) break;
    out += segment;
    used += next;
  }
  return `${out}…`;
}

/** `text` padded with spaces on the right to `width` columns (as `padEnd`, by display width). */
export function padWidth(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}

/**
 * `text` broken at spaces into lines of at most `width` columns, the lines after the first
 * indented by `indent`: for prose a terminal would otherwise break mid-word. A word longer than a
 * line is cut with {@link fitWidth}.
 */
export function wrapWidth(text: string, width: number, indent = '  '): string[] {
  if (displayWidth(text) <= width) return [text];
  const lead = text.length - text.trimStart().length;
  const lines: string[] = [];
  let line = text.slice(0, lead);
  let empty = true;
  for (const word of text.slice(lead).split(' ')) {
    if (!empty && displayWidth(`${line} ${word}`) > width) {
      lines.push(fitWidth(line, width));
      line = `${indent}${word}`;
    } else line = empty ? `${line}${word}` : `${line} ${word}`;
    empty = false;
  }
  lines.push(fitWidth(line, width));
  return lines;
}

/**
 * How wide a report's lines may be on a terminal `columns` wide: one less, so the last column is
 * never written (some terminals wrap there). However narrow (`COLUMNS=20`): the caller asked.
 */
export function tableWidth(columns: number): number {
  return Math.max(1, columns - 1);
}

/** Rows a line of `text` takes on a terminal `columns` wide (a line that fills a row takes one). */
export function terminalRows(text: string, columns: number): number {
  if (!(columns > 0) || !Number.isFinite(columns)) return 1;
  return Math.max(1, Math.ceil(displayWidth(text) / columns));
}
