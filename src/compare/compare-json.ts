/**
 * `troupe compare --json`'s document, made a piece at a time. Built whole (a `redactValue` copy
 * of the comparison, then one indented string, then that string masked again on its way out), a
 * comparison of two 100,000-item runs peaked at ~2 GB of RSS for a 240 MB document; made here
 * an item at a time, only the comparison itself is held (see docs/limits.md for the figures).
 *
 * The document is byte for byte what `terminalJson(redactValue({ ...comparison, gates }), 2)`
 * makes: the same members in the same order, each masked the same way, indented alike. Every
 * piece ends at a line end, and no redaction pattern spans a line end (src/journal/redact.ts), so
 * masking the pieces one by one as they are printed masks what masking the whole did.
 */
import { COMPARE_JSON_PIECE_CHARS } from '../constants.ts';
import { redactValue } from '../journal/redact.ts';
import { terminalJson } from '../run-dir/format.ts';
import type { RunComparison } from './compare.ts';
import type { GateResult } from './gate.ts';

const INDENT = '  ';

/**
 * The JSON of the comparison and its gates, indented by two spaces, in pieces that each end with
 * a line end (the last one with the document's): one member of the top-level object at a time,
 * the elements of an array member (the items) one at a time, gathered up to
 * {@link COMPARE_JSON_PIECE_CHARS} characters (one longer element is a piece of its own). Joined,
 * they are `terminalJson(redactValue({ ...comparison, gates }), 2)` and a line end.
 */
export function* compareJsonPieces(
  comparison: RunComparison,
  gates: readonly GateResult[],
): Generator<string> {
  let pending: string[] = [];
  let pendingChars = 0;
  const take = (text: string): string | undefined => {
    pending.push(text);
    pendingChars += text.length;
    if (pendingChars < COMPARE_JSON_PIECE_CHARS) return undefined;
    const piece = pending.join('');
    pending = [];
    pendingChars = 0;
    return piece;
  };
  for (const line of documentLines({ ...comparison, gates })) {
    const piece = take(line);
    if (piece !== undefined) yield piece;
  }
  if (pending.length > 0) yield pending.join('');
}

/** The lines (each ending with `\n`) of `document` as `terminalJson(redactValue(document), 2)` has them. */
function* documentLines(document: Readonly<Record<string, unknown>>): Generator<string> {
  // JSON.stringify leaves out the members it cannot write.
  const members = Object.entries(document).filter(
    ([, value]) => value !== undefined && typeof value !== 'function' && typeof value !== 'symbol',
  );
  if (members.length === 0) {
    yield '{}\n';
    return;
  }
  yield '{\n';
  for (const [position, [key, value]] of members.entries()) {
    const end = position < members.length - 1 ? ',\n' : '\n';
    const name = `${INDENT}${JSON.stringify(key)}: `;
    if (!Array.isArray(value) || value.length === 0) {
      yield `${name}${jsonOf(maskedMember(key, value), 1)}${end}`;
      continue;
    }
    yield `${name}[\n`;
    for (let index = 0; index < value.length; index += 1) {
      const element = jsonOf(maskedElement(key, value[index]), 2) ?? 'null';
      yield `${INDENT}${INDENT}${element}${index < value.length - 1 ? ',\n' : '\n'}`;
    }
    yield `${INDENT}]${end}`;
  }
  yield '}\n';
}

/**
 * `value`'s JSON as it stands `depth` levels deep in a document indented by two spaces: its lines
 * after the first indented by the depth (JSON.stringify escapes every line end inside a string, so
 * each `\n` it writes is one of its own). Undefined when JSON.stringify writes nothing for it.
 */
function jsonOf(value: unknown, depth: number): string | undefined {
  const json = terminalJson(value, 2) as string | undefined;
  if (json === undefined || depth === 0) return json;
  return json.replaceAll('\n', `\n${INDENT.repeat(depth)}`);
}

/** Member `key` of the document masked as `redactValue` masks it in the whole document. */
function maskedMember(key: string, value: unknown): unknown {
  return (redactValue({ [key]: value }) as Record<string, unknown>)[key];
}

/** An element of array member `key`, masked as `redactValue` masks it in the whole document. */
function maskedElement(key: string, element: unknown): unknown {
  return (redactValue({ [key]: [element] }) as Record<string, unknown[]>)[key]?.[0];
}
