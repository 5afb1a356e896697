/**
 * How many terminal columns text takes, for the live progress display (it moves the cursor back
 * over its last frame by rows, so it must know how many rows each line took) and the tables and
 * excerpts of every command. Text is measured and cut by grapheme (what a reader sees as one
 * character: a letter and its combining marks, an emoji ZWJ sequence, a flag): wide characters
 * (CJK, fullwidth forms, emoji) take two columns, combining marks and zero-width joiners none.
 */
import stringWidth from 'string-width';

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * Columns `text` takes on one terminal line, by string-width (East Asian widths, emoji sequences,
 * escape sequences taking none).
 */
export function displayWidth(text: string): number {
  return stringWidth(text);
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
    const next = stringWidth(segment);
    if (used + next > width - 1) break;
    out += segment;
    used += next;
  }
  // A cut just after an ellipsis of the text's own (`one...; context`) would show two in a row.
  return `${out.replace(/\s*(?:\.\.\.|…)[\s.,;:…]*$/, '')}…`;
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
