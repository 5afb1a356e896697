/**
 * How many terminal columns text takes, for the live progress display: it moves the cursor back
 * over its last frame by rows, so it must know how many rows each line took. Wide characters
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

/** Columns `text` takes on one terminal line (escape sequences take none). */
export function displayWidth(text: string): number {
  let width = 0;
  for (const char of text.replace(CSI, '')) width += charWidth(char);
  return width;
}

/**
 * `text` cut to at most `width` columns, ending in `…` when cut; never inside a surrogate pair, so
 * no half of an emoji is left to show as a replacement character.
 */
export function fitWidth(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  let out = '';
  let used = 0;
  for (const char of text) {
    const next = charWidth(char);
    if (used + next > width - 1) break;
    out += char;
    used += next;
  }
  return `${out}…`;
}

/** Rows a line of `text` takes on a terminal `columns` wide (a line that fills a row takes one). */
export function terminalRows(text: string, columns: number): number {
  if (!(columns > 0) || !Number.isFinite(columns)) return 1;
  return Math.max(1, Math.ceil(displayWidth(text) / columns));
}
