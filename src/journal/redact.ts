/**
 * Keeps API keys and auth headers out of journals. Two layers:
 * - by key: in tool arguments, caller metadata and error fields, every string under a key that
 *   names a secret (`apiKey`, `Authorization`, `x-api-key`, `client_secret`, `token`...) is
 *   replaced, however deeply nested;
 * - by shape: in every string of every event, substrings that look like credentials (`sk-...`,
 *   `Bearer ...`, `"apiKey": "..."`, `OPENAI_API_KEY=...`, GitHub/Slack/AWS/Google key formats).
 *
 * Two properties let `hashInput` mask a re-render from the journal and get the same hash the loop
 * recorded: redaction is idempotent (redacting twice changes nothing more), and no pattern matches
 * across a line break, so masking each projection section on its way into the journal equals
 * masking the whole render (sections are joined by blank lines).
 */
import type { Masking } from './canonical-json.ts';
import { REDACTED } from './constants.ts';

/** Keys whose values are secrets. `token(?!s)` keeps counts such as `maxTokens` readable. */
export const SECRET_KEY_PATTERN = /api[_-]?key|authorization|x-api-key|secret|passw(?:or)?d|token(?!s)/i;

/** Event members whose object keys are checked against {@link SECRET_KEY_PATTERN}. */
const KEYED_MEMBERS: ReadonlySet<string> = new Set(['args', 'metadata', 'error']);

const TOKEN_CHARS = '[A-Za-z0-9._~+/-]';
const NON_DIGIT_TOKEN_CHARS = '[A-Za-z._~+/-]';

/** An auth scheme followed by a credential: it has a digit, or is too long to be a word. */
const AUTH_SCHEME = new RegExp(
  `\\b(Bearer|Basic)([ \\t]+)(?:(?=${NON_DIGIT_TOKEN_CHARS}*[0-9])${TOKEN_CHARS}{8,}|${TOKEN_CHARS}{20,})=*`,
  'g',
);

/** Credential formats with a recognisable prefix. */
const KEY_SHAPES: readonly RegExp[] = [
  // OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-) keys.
  /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{10,}/g,
  /(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{20,}/g,
  /(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{20,}/g,
  /(?<![A-Za-z0-9_-])xox[abprs]-[A-Za-z0-9-]{10,}/g,
  /(?<![A-Za-z0-9])AKIA[0-9A-Z]{16}(?![A-Za-z0-9])/g,
  /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])/g,
];

/** `"key": "value"` or `'key': 'value'` (JSON, Python reprs). */
const QUOTED_PAIR =
  /(["'])((?:(?!\1)[^\\\n]|\\.){1,100})\1([ \t]*[:=][ \t]*)(["'])((?:(?!\4)[^\\\n]|\\.)*)\4/g;

/**
 * `key: value` or `KEY=value` (headers, env files, YAML, query strings), value optionally quoted.
 * The key and its separator are matched first and the value only after a secret key: scanning a
 * value for every key would be quadratic on text like `a:a:a:...`, and would swallow pairs inside
 * a longer value (`url: https://x?api_key=...`).
 */
const UNQUOTED_KEY = /(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]{1,100})([ \t]*[:=][ \t]*)/g;
const UNQUOTED_VALUE = /((?:Bearer|Basic)[ \t]+)?("[^"\n]*"|'[^'\n]*'|[^\s"',;&]+)/y;

/**
 * Unquoted keys come from free text, so the secret word must end a word part (`access_token`,
 * `AWS_SECRET_ACCESS_KEY`, `x-api-key`) to spare prose and names like `tokenizer`.
 */
const UNQUOTED_SECRET_KEY = /(?:api[_-]?key|authorization|secret|passw(?:or)?d|token)(?![a-z])/i;

/**
 * Cheap supersets of what the patterns need, tested first: every event string passes through here
 * (and every round's whole input, for its hash), and almost none holds a secret.
 */
const MAY_HAVE_SCHEME = /Bearer|Basic/;
const MAY_HAVE_SHAPE = /sk-|gh[pousr]_|github_pat_|xox[abprs]-|AKIA|AIza/;
const MAY_HAVE_SECRET_KEY = /api[_-]?key|authorization|secret|passw(?:or)?d|token/i;

/** Lines seen recently, masked: journals repeat text (a result's event and its history entry) and
 * every round's input hash masks the whole render again, mostly lines it has masked before. */
const maskedLines = new Map<string, string>();
const MASKED_LINES_LIMIT = 20_000;
const CACHED_LINE_CHARS = 4_096;

/**
 * Masks every credential-looking substring of `text`. No pattern matches across a line break, so
 * masking line by line gives exactly the same text, and each line's result can be reused.
 */
export function redactText(text: string): string {
  if (!text.includes('\n')) return redactLine(text);
  return text.split('\n').map(redactLine).join('\n');
}

function redactLine(line: string): string {
  if (line.length > CACHED_LINE_CHARS) return redactUncached(line);
  let masked = maskedLines.get(line);
  if (masked === undefined) {
    masked = redactUncached(line);
    if (maskedLines.size >= MASKED_LINES_LIMIT) maskedLines.clear();
    maskedLines.set(line, masked);
  }
  return masked;
}

function redactUncached(text: string): string {
  let out = text;
  if (MAY_HAVE_SCHEME.test(out)) {
    out = out.replace(AUTH_SCHEME, (_match, scheme: string, space: string) => `${scheme}${space}${REDACTED}`);
  }
  if (MAY_HAVE_SHAPE.test(out)) for (const shape of KEY_SHAPES) out = out.replace(shape, REDACTED);
  if (!MAY_HAVE_SECRET_KEY.test(out)) return out;
  out = out.replace(
    QUOTED_PAIR,
    (match, quote: string, key: string, separator: string, valueQuote: string, value: string) =>
      SECRET_KEY_PATTERN.test(key) && value !== REDACTED
        ? `${quote}${key}${quote}${separator}${valueQuote}${REDACTED}${valueQuote}`
        : match,
  );
  return redactUnquotedPairs(out);
}

function redactUnquotedPairs(text: string): string {
  const keys = new RegExp(UNQUOTED_KEY.source, 'g');
  const values = new RegExp(UNQUOTED_VALUE.source, 'y');
  let out = '';
  let copied = 0;
  for (let match = keys.exec(text); match !== null; match = keys.exec(text)) {
    const [head, key = '', separator = ''] = match;
    if (!UNQUOTED_SECRET_KEY.test(key)) continue;
    values.lastIndex = match.index + head.length;
    const valueMatch = values.exec(text);
    if (valueMatch === null) continue;
    const [, scheme = '', value = ''] = valueMatch;
    const quote = value.startsWith('"') || value.startsWith("'") ? value.charAt(0) : '';
    if ((quote ? value.slice(1, -1) : value) === REDACTED) continue;
    out += `${text.slice(copied, match.index)}${key}${separator}${scheme}${quote}${REDACTED}${quote}`;
    copied = values.lastIndex;
    keys.lastIndex = copied;
  }
  return out + text.slice(copied);
}

/** A copy of `value` with {@link redactText} applied to every string in it (object keys are kept). */
export function redactStrings<T>(value: T): T {
  return walk(value, false, false) as T;
}

/** Chain fields a sink adds after masking: they are written as they are. */
const CHAIN_MEMBERS: ReadonlySet<string> = new Set(['seq', 'ts', 'prev']);

/**
 * The journal's masking, applied while an event is serialized (`canonicalJson(event,
 * JOURNAL_MASKING)`): the same text as `canonicalJson(redactEvent(body))` plus the chain fields,
 * without building the masked copy.
 */
export const JOURNAL_MASKING: Masking = {
  text: (value, secret) => (secret ? REDACTED : redactText(value)),
  isSecretKey: (key) => SECRET_KEY_PATTERN.test(key),
  keyedMembers: KEYED_MEMBERS,
  plainMembers: CHAIN_MEMBERS,
};

/**
 * A copy of an event body with its secrets masked: by key in `args`, `metadata` and `error`, by
 * shape in every string.
 */
export function redactEvent<T extends object>(event: T): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(event)) {
    out[key] = walk(value, KEYED_MEMBERS.has(key), false);
  }
  return out as T;
}

function walk(value: unknown, byKey: boolean, secret: boolean): unknown {
  if (typeof value === 'string') return secret ? REDACTED : redactText(value);
  if (Array.isArray(value)) return value.map((item: unknown) => walk(item, byKey, secret));
  if (typeof value !== 'object' || value === null) return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return walk(toJSON.call(value), byKey, secret);
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] = walk(item, byKey, secret || (byKey && SECRET_KEY_PATTERN.test(key)));
  }
  return out;
}
