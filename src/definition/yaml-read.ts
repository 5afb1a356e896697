/** The one place YAML text is parsed: never throws, never warns on the console. */
import { type Document, isAlias, LineCounter, Parser, parseDocument, visit } from 'yaml';
import { MAX_FLOW_NESTING, MAX_YAML_ALIAS_COUNT } from './constants.ts';

/** Why YAML text was refused without being parsed, or why parsing threw. */
export interface YamlRefusal {
  readonly message: string;
  /** Offset in the text the refusal is about. */
  readonly offset: number;
}

/** A YAML value as read from a string, or the reason it could not be. */
export type YamlRead =
  | { readonly ok: true; readonly doc: Document; readonly value: unknown; readonly lineCounter: LineCounter }
  | {
      readonly ok: false;
      /** The parsed document when the failure is a YAML error (see `doc.errors`). */
      readonly doc: Document | undefined;
      readonly lineCounter: LineCounter;
      readonly refusal?: YamlRefusal;
    };

/**
 * Parses YAML without ever throwing: syntax errors, alias bombs and stack overflows become
 * `ok: false`, and absurdly deep flow nesting is refused before the parser sees it. `subject`
 * names the text in messages (`Invalid YAML in frontmatter: ...`).
 */
export function readYaml(text: string, subject = 'frontmatter'): YamlRead {
  const lineCounter = new LineCounter();
  const tooDeep = flowNestingOverflow(text);
  if (tooDeep !== undefined) {
    countLines(text, lineCounter);
    const message = `Invalid YAML in ${subject}: expected \`[ ]\`/\`{ }\` nested at most ${MAX_FLOW_NESTING} levels deep, found deeper nesting`;
    return { ok: false, doc: undefined, lineCounter, refusal: { message, offset: tooDeep } };
  }
  const tooDeepInLine = blockNestingOverflow(text);
  if (tooDeepInLine !== undefined) {
    countLines(text, lineCounter);
    const message =
      `Invalid YAML in ${subject}: expected \`- \`/\`? \`/\`: \` nested at most ${MAX_FLOW_NESTING} levels deep on one ` +
      'line, found deeper nesting';
    return { ok: false, doc: undefined, lineCounter, refusal: { message, offset: tooDeepInLine } };
  }
  let doc: Document | undefined;
  try {
    doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, logLevel: 'error' });
    if (doc.errors.length > 0) return { ok: false, doc, lineCounter };
    return { ok: true, doc, lineCounter, value: doc.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT }) };
  } catch (thrown) {
    const reason = thrown instanceof Error ? thrown.message : String(thrown);
    if (lineCounter.lineStarts.length === 0) countLines(text, lineCounter);
    const alias = doc !== undefined && /alias/i.test(reason) ? firstAliasOffset(doc) : undefined;
    const refusal =
      alias === undefined
        ? { message: `Invalid YAML in ${subject}: ${reason}`, offset: 0 }
        : {
            message: `Invalid YAML in ${subject}: expected at most ${MAX_YAML_ALIAS_COUNT} alias expansions, found more (aliases of aliases multiply: a "billion laughs" document)`,
            offset: alias,
          };
    return { ok: false, doc, lineCounter, refusal };
  }
}

/** Where the first alias (`*name`) of `doc` is written. */
function firstAliasOffset(doc: Document): number | undefined {
  let offset: number | undefined;
  visit(doc, {
    Alias(_key, node) {
      if (isAlias(node) && node.range) offset = node.range[0];
      return visit.BREAK;
    },
  });
  return offset;
}

/**
 * Offset of the bracket that opens flow collections deeper than MAX_FLOW_NESTING, if any. The
 * `yaml` parser slows down sharply on deep nesting (hundreds of ms at a few thousand levels);
 * real definitions nest a few levels. Quotes are ignored: only >64 unbalanced brackets trip it.
 */
function flowNestingOverflow(text: string): number | undefined {
  let depth = 0;
  for (let offset = 0; offset < text.length; offset++) {
    const char = text.charCodeAt(offset);
    if (char === 0x5b || char === 0x7b) {
      depth++;
      if (depth > MAX_FLOW_NESTING) return offset;
    } else if ((char === 0x5d || char === 0x7d) && depth > 0) {
      depth--;
    }
  }
  return undefined;
}

/**
 * Offset of the indicator that nests block collections deeper than MAX_FLOW_NESTING on one line
 * (`- - - - x`, `? ? ? x`), if any: the parser recurses once per level, and 30,000 of them (60 KB)
 * overflowed its stack ("Maximum call stack size exceeded", said of no particular place).
 */
function blockNestingOverflow(text: string): number | undefined {
  let depth = 0;
  let lineStart = true;
  for (let offset = 0; offset < text.length; offset++) {
    const char = text.charCodeAt(offset);
    if (char === 0x0a) {
      depth = 0;
      lineStart = true;
    } else if (!lineStart || char === 0x20 || char === 0x09) {
      // Indentation, or the rest of a line past its indicators.
    } else if ((char === 0x2d || char === 0x3f || char === 0x3a) && isBlank(text.charCodeAt(offset + 1))) {
      depth++;
      if (depth > MAX_FLOW_NESTING) return offset;
    } else {
      lineStart = false;
    }
  }
  return undefined;
}

function isBlank(char: number): boolean {
  return char === 0x20 || char === 0x09;
}

function countLines(text: string, lineCounter: LineCounter): void {
  lineCounter.addNewLine(0);
  for (let offset = text.indexOf('\n'); offset !== -1; offset = text.indexOf('\n', offset + 1)) {
    lineCounter.addNewLine(offset + 1);
  }
}

/** The parser's messages for a quote, `[` or `{` that is never closed. */
const UNCLOSED =
  /^(?:Missing closing ["']quote|Flow (?:sequence|map) in block collection must be sufficiently indented and end with)/;

/**
 * For the parse errors of `text`: where the quote, `[` or `{` an error is about opens, when the
 * error says one is never closed (the parser reports it where the next entry or the text begins,
 * rarely where the mistake is); undefined for any other error. The text's CST is walked once, on
 * the first such error.
 */
export function unclosedLocator(
  text: string,
): (error: { readonly message: string; readonly pos: readonly [number, number] }) => number | undefined {
  let opening: number | null | undefined;
  return (error) => {
    if (!UNCLOSED.test(error.message)) return undefined;
    opening ??= unclosedOpening(text) ?? null;
    return opening !== null && opening <= error.pos[0] ? opening : undefined;
  };
}

/** A CST token as far as {@link unclosedOpening} looks at it. */
interface CstNode {
  readonly type?: unknown;
  readonly offset?: unknown;
  readonly source?: unknown;
  readonly [field: string]: unknown;
}

/**
 * Where the first quoted scalar or flow collection (`[`, `{`) that is never closed opens, or
 * undefined. The parser reports such an error where the text ends, which is rarely where the
 * mistake is; this finds where it began. Nesting is bounded by MAX_FLOW_NESTING (checked before).
 */
function unclosedOpening(text: string): number | undefined {
  const visit = (node: unknown, depth: number): number | undefined => {
    if (typeof node !== 'object' || node === null || depth > MAX_FLOW_NESTING * 4) return undefined;
    if (Array.isArray(node)) {
      for (const item of node) {
        const found = visit(item, depth + 1);
        if (found !== undefined) return found;
      }
      return undefined;
    }
    const token = node as CstNode;
    const offset = typeof token.offset === 'number' ? token.offset : undefined;
    const source = typeof token.source === 'string' ? token.source : '';
    if (token.type === 'double-quoted-scalar' && !/^"(?:[^"\\]|\\[\s\S])*"$/.test(source)) return offset;
    if (token.type === 'single-quoted-scalar' && !/^'(?:[^']|'')*'$/.test(source)) return offset;
    if (token.type === 'flow-collection') {
      const end = Array.isArray(token.end) ? (token.end as CstNode[]) : [];
      const closed = end.some((part) => part.type === 'flow-map-end' || part.type === 'flow-seq-end');
      if (!closed) return offset;
    }
    for (const field of ['items', 'start', 'key', 'sep', 'value', 'end']) {
      const found = visit(token[field], depth + 1);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  try {
    for (const token of new Parser().parse(text)) {
      const found = visit(token, 0);
      if (found !== undefined) return found;
    }
  } catch {
    // The CST parser should not throw; if it does, the parser's own position stands.
  }
  return undefined;
}
