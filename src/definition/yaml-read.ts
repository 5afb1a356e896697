/** The one place YAML text is parsed: never throws, never warns on the console. */
import { type Document, isAlias, LineCounter, parseDocument, visit } from 'yaml';
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

function countLines(text: string, lineCounter: LineCounter): void {
  lineCounter.addNewLine(0);
  for (let offset = text.indexOf('\n'); offset !== -1; offset = text.indexOf('\n', offset + 1)) {
    lineCounter.addNewLine(offset + 1);
  }
}
