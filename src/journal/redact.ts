/**
 * Keeps API keys and auth headers out of journals. Two layers:
 * - by key: in tool arguments, caller metadata, error fields, tool result data and completion
 *   results, every string under a key that
 *   names a secret (`apiKey`, `Authorization`, `x-api-key`, `client_secret`, `token`...) is
 *   replaced, however deeply nested;
 * - by shape: in every string of every event, substrings that look like credentials (`sk-...`,
 *   `Bearer ...`, `"apiKey": "..."`, `OPENAI_API_KEY=...`, GitHub/GitLab/Slack/AWS/Google/Stripe/
 *   Hugging Face/npm key formats, JWTs, passwords in URLs, PEM private-key bodies, cookie header
 *   values, id-like values under session keys).
 *
 * A secret with no known format and no key name before it (an AWS secret access key alone in
 * prose) is not recognised: only registered values ({@link registerSecretValues}) are masked
 * whatever their shape.
 *
 * Two properties let `hashInput` mask a re-render from the journal and get the same hash the loop
 * recorded: redaction is idempotent (redacting twice changes nothing more), and no pattern matches
 * across a line break, so masking each projection section on its way into the journal equals
 * masking the whole render (sections are joined by blank lines).
 */

import { UserError } from '../errors.ts';
import { forgetMaskedTexts, type Masking } from './canonical-json.ts';
import { MAX_LITERAL_SECRETS, REDACTED } from './constants.ts';

/**
 * Keys whose values are secrets. `token(?!s)` keeps counts such as `maxTokens` readable; `cookie`
 * covers `Cookie` and `Set-Cookie` headers held in objects.
 */
export const SECRET_KEY_PATTERN =
  /api[_-]?key|authorization|x-api-key|secret|passw(?:or)?d|token(?!s)|private[_-]?key|cookie/i;

/** Event members whose object keys are checked against {@link SECRET_KEY_PATTERN}. */
const KEYED_MEMBERS: ReadonlySet<string> = new Set(['args', 'metadata', 'error', 'data', 'result']);

const TOKEN_CHARS = '[A-Za-z0-9._~+/-]';
const NON_DIGIT_TOKEN_CHARS = '[A-Za-z._~+/-]';

/** An auth scheme followed by a credential: it has a digit, or is too long to be a word. */
const AUTH_SCHEME = new RegExp(
  `\\b(Bearer|Basic)([ \\t]+)(?:(?=${NON_DIGIT_TOKEN_CHARS}*[0-9])${TOKEN_CHARS}{8,}|${TOKEN_CHARS}{20,})=*`,
  'g',
);

/** Credential formats with a recognisable prefix. */
const KEY_SHAPES: readonly RegExp[] = [
  // OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-) keys.
  /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{10,}/g,
  /(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{20,}/g,
  /(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{20,}/g,
  /(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}/g,
  /(?<![A-Za-z0-9_-])xox[abprs]-[A-Za-z0-9-]{10,}/g,
  /(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])/g,
  /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])/g,
  // Stripe secret and restricted keys, Hugging Face and npm tokens.
  /(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}/g,
  /(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}/g,
  /(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])/g,
  // JSON Web Tokens: header.payload.signature, the first two base64url JSON objects.
  /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
];

/**
 * A password in a URL's user info: `postgres://app:PASS@host`, `redis://:PASS@host`. The user name
 * stays readable; a URL without a password (`ssh://git@host`) is left alone. The password runs to
 * the last `@` before the host, as a URL parser reads it: `https://u:p@ss@host` left `ss` showing.
 */
const URL_PASSWORD = /\b([A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/[^\s:/?#@"'<>]*):([^\s/?#"'<>]+)@/g;

/**
 * A PEM private key: the BEGIN line stays, the base64 body (and encryption headers) becomes one
 * REDACTED line, the END line stays when present (a cut-off block is masked to its end). Bodies
 * are on their own lines, or joined by literal `\n` escapes when the key sits in a JSON string.
 * The body never holds an empty line, so masking sections joined by blank lines one by one gives
 * the same text as masking the whole.
 */
const PEM_PRIVATE_KEY =
  /(-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY)-----)((?:(?:\r?\n|\\r\\n|\\n)(?:[A-Za-z-]+: [^\r\n\\]*|[A-Za-z0-9+/=]+)(?=[\r\n"\\]|$))*)((?:\r?\n|\\r\\n|\\n)-----END \2-----)?/g;

/** `"key": "value"` or `'key': 'value'` (JSON, Python reprs). */
const QUOTED_PAIR =
  /(["'])((?:(?!\1)[^\\\n]|\\.){1,100})\1([ \t]*[:=][ \t]*)(["'])((?:(?!\4)[^\\\n]|\\.)*)\4/g;

/**
 * `\"key\": \"value\"`: a JSON member inside JSON text that is itself a JSON string (a result's
 * `answer` whose member holds JSON, a tool's JSON output quoted in a JSON line), each quote escaped
 * by the same run of backslashes. {@link QUOTED_PAIR} takes the outer string whole and never looks
 * inside. Only a secret key ({@link SECRET_KEY_PATTERN}) is matched, so a member that holds more
 * escaped JSON (`\"answer\": \"{\\\"apiKey\\\": ...`) is not consumed whole either. The value is
 * bounded so a line of unclosed openings stays linear.
 */
const ESCAPED_PAIR =
  /(?<!\\)(\\+)"((?=[^\\"\n]*?(?:api[_-]?key|authorization|secret|passw(?:or)?d|token(?!s)|private[_-]?key|cookie))[^\\"\n]{1,100})(?<!\\)\1"([ \t]*[:=][ \t]*)(?<!\\)\1"(.{0,1000}?)(?<!\\)\1"/gi;

/**
 * `key: value` or `KEY=value` (headers, env files, YAML, query strings), value optionally quoted.
 * The key and its separator are matched first and the value only after a secret key: scanning a
 * value for every key would be quadratic on text like `a:a:a:...`, and would swallow pairs inside
 * a longer value (`url: https://x?api_key=...`).
 */
const UNQUOTED_KEY = /(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]{1,100})([ \t]*[:=][ \t]*)/g;
/**
 * A backslash in an unquoted value is taken with the character after it, but a JSON escape
 * (`\"`, `\\`, `\n`, `\r`, `\t`, `\u`) ends the value: what the CLI prints, JSON lines included,
 * passes here again, and masking `\"password=[REDACTED]\"` ate the backslash of the closing
 * quote (invalid JSON), `[REDACTED]\nnext line` the next line. A value between escaped quotes
 * (`PASSWORD=\"two words\"`, an env line inside a JSON string) is taken whole, quotes kept.
 */
const UNQUOTED_VALUE =
  /((?:Bearer|Basic)[ \t]+)?("[^"\n]*"|'[^'\n]*'|\\"[^"\\\n]*\\"|(?:[^\s"',;&\\]|\\[^\s"\\nrtu])+)/y;

/**
 * Unquoted keys come from free text, so the secret word must end a word part (`access_token`,
 * `AWS_SECRET_ACCESS_KEY`, `x-api-key`) to spare prose and names like `tokenizer`.
 */
const UNQUOTED_SECRET_KEY =
  /(?:api[_-]?key|authorization|secret|passw(?:or)?d|token|private[_-]?key)(?![a-z])/i;

/**
 * Keys that name a session (`session`, `sessionId`, `session_id`, `sid`, `connect.sid`,
 * `PHPSESSID`, `JSESSIONID`): their value is a credential only when it looks like an id
 * ({@link ID_LIKE}), so `session: started` and `Session: 3` stay readable. Checked in text only
 * (unquoted and quoted pairs), not by key in objects, where a session id is often a correlation id.
 */
const SESSION_KEY = /(?:^|[^A-Za-z])(?:session|sid)$|sess(?:ion)?[_-]?id$/i;
/** An id-like value: letters and digits both and 8 characters or more, or 20 or more of any. */
const ID_LIKE =
  /^(?:(?=[^0-9]*[0-9])(?=[^A-Za-z]*[A-Za-z])[A-Za-z0-9._~+/%-]{8,}|[A-Za-z0-9._~+/%-]{20,})=*$/;

/**
 * A `Cookie:` or `Set-Cookie:` header name. Every `name=value` pair of a Cookie header is masked,
 * the first pair of a Set-Cookie header only (its attributes, `Path=/; HttpOnly`, stay).
 */
const COOKIE_HEADER = /(?<![A-Za-z0-9_-])(Set-)?Cookie[ \t]*:[ \t]*/gi;
/** One cookie pair; the value stops at what no cookie value holds (blanks, `"`, `;`, `,`, `\`). */
const COOKIE_PAIR = /([^\s=;,"'\\]{1,200})=("[^"\\\n]*"|[^\s";,\\]*)/y;
const COOKIE_SEPARATOR = /;[ \t]*/y;

/**
 * Keys that name a problem with a secret rather than hold one: error codes such as
 * `missing_api_key` (`troupe: missing_api_key: The openai provider needs...` lost its "The").
 */
const PROBLEM_KEY = /^(?:missing|invalid|unknown|no|bad|empty|expired|revoked)[_-]/i;

/**
 * Keys that are source file names, followed by a line and column in a stack frame
 * (`token-counter.ts:139:20`): a file named for tokens holds no secret, and masking its position
 * hid where a thread was stuck.
 */
const SOURCE_FILE_KEY = /\.(?:[cm]?[jt]sx?|py|rb|go|rs|java|kt|swift|c|cc|cpp|h|hpp|cs|php)$/i;

/**
 * Cheap supersets of what the patterns need, tested first: every event string passes through here
 * (and every round's whole input, for its hash), and almost none holds a secret.
 */
const MAY_HAVE_SCHEME = /Bearer|Basic/;
const MAY_HAVE_SHAPE =
  /sk-|gh[pousr]_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|AIza|_live_|_test_|hf_|npm_|eyJ/;
const MAY_HAVE_URL_PASSWORD = /:\/\/[^\s]*@/;
const MAY_HAVE_PEM = 'PRIVATE KEY-----';
const MAY_HAVE_COOKIE = /cookie/i;
// `sid` only after a non-letter, as SESSION_KEY takes it: bare, it let every short text holding
// "inside", "consider" or "beside" past the screen.
const MAY_HAVE_SECRET_KEY =
  /api[_-]?key|authorization|secret|passw(?:or)?d|token|private|cookie|sess|(?:^|[^a-z])sid/i;

/**
 * A superset of every prefilter above (and of the PEM marker), case-insensitive: a text it does not
 * match holds nothing any pattern could mask, so it is returned as it is. Tested first on short
 * texts, which are mostly ids, hashes, names and numbers seen once (an input hash, a call id): they
 * skipped no work in the line cache, only filled it.
 */
const MAY_NEED_MASKING =
  /Bearer|Basic|sk-|gh[pousr]_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|AIza|_live_|_test_|hf_|npm_|eyJ|:\/\/|api[_-]?key|authorization|secret|passw(?:or)?d|token|private|cookie|sess|(?:^|[^a-z])sid/i;
/** Texts up to this length are screened with {@link MAY_NEED_MASKING} before the line cache. */
const SCREENED_CHARS = 256;

/** Lines seen recently, masked: journals repeat text (a result's event and its history entry) and
 * every round's input hash masks the whole render again, mostly lines it has masked before. */
const maskedLines = new Map<string, string>();
const MASKED_LINES_LIMIT = 20_000;
const CACHED_LINE_CHARS = 4_096;

/**
 * Credentials this process was configured with (API keys, secret header values), longest first:
 * masked wherever they appear, whatever their shape (a `gsk_...` or a self-hosted server's key
 * matches no pattern, and a 401 body often echoes the key).
 */
let literalSecrets: readonly string[] = [];
/** {@link literalSecrets} by the hash of their first {@link INDEX_CHARS} characters, once there are many. */
let secretsByPrefix: ReadonlyMap<number, readonly string[]> | undefined;
let secretsVersion = 0;
/** Shorter values are not masked literally (`EMPTY`, `ollama`: placeholders, and too common). */
const MIN_LITERAL_SECRET_CHARS = 8;
/**
 * Up to this many values, each is looked for with `includes` (fastest for a handful); past it, a
 * text is scanned once against an index of their first characters, whatever their number.
 */
const LINEAR_SCAN_SECRETS = 64;
const INDEX_CHARS = 4;

/**
 * Adds configured credentials to what {@link redactText} masks, from now on, in this thread: every
 * provider registers its API key and secret headers when it is built, and the Supervisor those of
 * its configured providers. Values shorter than 8 characters, with a line break, or part of the
 * mask itself are ignored. Every copy of this module loaded in the thread learns them (a tool or
 * provider module can bring its own copy of troupe), and so do {@link onSecretValues} listeners.
 *
 * @throws UserError `too_many_secrets` when the thread would hold more than
 * {@link MAX_LITERAL_SECRETS} (4,096) distinct values: none of `values` is added, and whatever
 * registers them (a provider, an MCP server connection, a Supervisor) fails rather than leak.
 */
export function registerSecretValues(values: Iterable<string | undefined>): void {
  const { added, held } = addSecretValues(values);
  // This copy holds them already: only the others (and onSecretValues listeners) hear of them.
  if (added.length > 0) {
    for (const listener of secretBus.listeners) if (listener !== learnSecretValues) listener(added);
  }
  if (held.length > 0) for (const listener of registrations) listener(held);
}

/** What one registration brought: the values new to this copy, and all it gave that are masked. */
interface Registration {
  readonly added: readonly string[];
  readonly held: readonly string[];
}

function addSecretValues(values: Iterable<string | undefined>): Registration {
  const known = new Set(literalSecrets);
  const added: string[] = [];
  const held: string[] = [];
  const given = new Set<string>();
  for (const value of values) {
    const secret = value?.trim();
    if (secret === undefined || secret.length < MIN_LITERAL_SECRET_CHARS || /[\r\n]/.test(secret)) continue;
    if (REDACTED.includes(secret) || given.has(secret)) continue;
    given.add(secret);
    held.push(secret);
    if (known.has(secret)) continue;
    known.add(secret);
    added.push(secret);
  }
  if (added.length === 0) return { added, held };
  if (known.size > MAX_LITERAL_SECRETS) {
    throw new UserError(
      'too_many_secrets',
      `Expected at most ${MAX_LITERAL_SECRETS} distinct credentials to mask in this thread, got ${known.size}: ` +
        'the new ones (provider keys, MCP server tokens) are refused rather than written unmasked',
      { limit: MAX_LITERAL_SECRETS, registered: literalSecrets.length, refused: added.length },
    );
  }
  literalSecrets = [...literalSecrets, ...added].sort((a, b) => b.length - a.length);
  secretsByPrefix = literalSecrets.length > LINEAR_SCAN_SECRETS ? indexByPrefix(literalSecrets) : undefined;
  secretsVersion += 1;
  // Texts masked before are masked again: a cached one may hold the new value.
  maskedLines.clear();
  forgetMaskedTexts();
  return { added, held };
}

/**
 * Who hears of the values registered in this thread, shared by every copy of this module in it:
 * a source checkout's threads run bundles, and a tool or provider module bundled apart (or an
 * installed one with its own copy of troupe) registers its key in a copy the host never reads.
 */
interface SecretBus {
  readonly listeners: Set<(values: readonly string[]) => void>;
  /**
   * {@link onSecretRegistrations} listeners. Absent from a bus an earlier version made: this copy
   * adds it; an earlier copy tells its listeners of new values only.
   */
  registrations?: Set<(values: readonly string[]) => void>;
}
const SECRET_BUS = Symbol.for('troupe.secretValues');
const buses = globalThis as { [SECRET_BUS]?: SecretBus };
buses[SECRET_BUS] ??= { listeners: new Set() };
const secretBus: SecretBus = buses[SECRET_BUS];
secretBus.registrations ??= new Set();
const registrations: Set<(values: readonly string[]) => void> = secretBus.registrations;
/** This copy's listener: values another copy of this module registered. */
function learnSecretValues(values: readonly string[]): void {
  try {
    addSecretValues(values);
  } catch {
    // Over this copy's bound: the copy that registered them refused them the same way or holds them.
  }
}
secretBus.listeners.add(learnSecretValues);

/**
 * Calls `listener` with every value registered in this thread so far (when there are any), then
 * with the values each later {@link registerSecretValues} adds, in any copy of this module. Returns
 * the unsubscribe function. An actor host forwards them to the supervisor's thread, which writes
 * what agents deliver.
 */
export function onSecretValues(listener: (values: readonly string[]) => void): () => void {
  secretBus.listeners.add(listener);
  if (literalSecrets.length > 0) listener(literalSecrets);
  return () => secretBus.listeners.delete(listener);
}

/**
 * Calls `listener`, synchronously inside each {@link registerSecretValues} call (of any copy of
 * this module from this version on), with every value that call gave that is masked, whether this
 * thread held it already or not: a redis worker attributes each value to the supervisor whose run
 * registered it (secret-forwarder.ts), and a value a second run registers again is that run's too.
 * Returns the unsubscribe function.
 */
export function onSecretRegistrations(listener: (values: readonly string[]) => void): () => void {
  registrations.add(listener);
  return () => registrations.delete(listener);
}

/** Changes whenever {@link registerSecretValues} adds a value: caches of masked text compare it. */
export function maskingVersion(): number {
  return secretsVersion;
}

function prefixHash(text: string, at: number): number {
  let hash = 0;
  for (let i = at; i < at + INDEX_CHARS; i++) hash = (Math.imul(hash, 31) + text.charCodeAt(i)) | 0;
  return hash;
}

function indexByPrefix(secrets: readonly string[]): Map<number, string[]> {
  const index = new Map<number, string[]>();
  for (const secret of secrets) {
    const hash = prefixHash(secret, 0);
    const bucket = index.get(hash);
    if (bucket === undefined) index.set(hash, [secret]);
    else bucket.push(secret);
  }
  return index;
}

/** The registered values `text` holds, longest first (the order {@link maskLiterals} replaces in). */
function secretsIn(text: string, index: ReadonlyMap<number, readonly string[]>): string[] {
  const found = new Set<string>();
  for (let at = 0; at + MIN_LITERAL_SECRET_CHARS <= text.length; at++) {
    const bucket = index.get(prefixHash(text, at));
    if (bucket === undefined) continue;
    for (const secret of bucket) if (text.startsWith(secret, at)) found.add(secret);
  }
  return found.size === 0 ? [] : literalSecrets.filter((secret) => found.has(secret));
}

function maskLiterals(text: string): string {
  const candidates = secretsByPrefix === undefined ? literalSecrets : secretsIn(text, secretsByPrefix);
  let out = text;
  for (const secret of candidates) if (out.includes(secret)) out = out.replaceAll(secret, REDACTED);
  return out;
}

/**
 * Masks every credential-looking substring of `text`, and every configured credential
 * ({@link registerSecretValues}). No pattern matches across a line break, so masking line by line
 * gives exactly the same text, and each line's result can be reused.
 */
export function redactText(input: string): string {
  const text = literalSecrets.length === 0 ? input : maskLiterals(input);
  if (text.length <= SCREENED_CHARS && !MAY_NEED_MASKING.test(text)) return text;
  const unpem = text.includes(MAY_HAVE_PEM) ? text.replace(PEM_PRIVATE_KEY, maskPem) : text;
  if (!unpem.includes('\n')) return redactLine(unpem);
  return unpem.split('\n').map(redactLine).join('\n');
}

function maskPem(
  match: string,
  begin: string,
  _label: string,
  body: string,
  end: string | undefined,
): string {
  // Idempotent: an already masked block has no body left (its `[REDACTED]` line is not base64).
  if (body === '') return match;
  const newline = /^\r?\n/.test(body)
    ? body.startsWith('\r')
      ? '\r\n'
      : '\n'
    : body.startsWith('\\r')
      ? '\\r\\n'
      : '\\n';
  return `${begin}${newline}${REDACTED}${end ?? ''}`;
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
  if (MAY_HAVE_URL_PASSWORD.test(out)) out = out.replace(URL_PASSWORD, `$1:${REDACTED}@`);
  if (MAY_HAVE_COOKIE.test(out)) out = redactCookieHeaders(out);
  if (!MAY_HAVE_SECRET_KEY.test(out)) return out;
  out = out.replace(
    QUOTED_PAIR,
    (match, quote: string, key: string, separator: string, valueQuote: string, value: string) =>
      (SECRET_KEY_PATTERN.test(key) || (SESSION_KEY.test(key) && ID_LIKE.test(value))) && value !== REDACTED
        ? `${quote}${key}${quote}${separator}${valueQuote}${REDACTED}${valueQuote}`
        : match,
  );
  if (out.includes('\\"')) {
    out = out.replace(
      ESCAPED_PAIR,
      (match, slashes: string, key: string, separator: string, value: string) =>
        value !== REDACTED
          ? `${slashes}"${key}${slashes}"${separator}${slashes}"${REDACTED}${slashes}"`
          : match,
    );
  }
  return redactUnquotedPairs(out);
}

function redactUnquotedPairs(text: string): string {
  const keys = new RegExp(UNQUOTED_KEY.source, 'g');
  const values = new RegExp(UNQUOTED_VALUE.source, 'y');
  let out = '';
  let copied = 0;
  for (let match = keys.exec(text); match !== null; match = keys.exec(text)) {
    const [head, key = '', separator = ''] = match;
    const session = !UNQUOTED_SECRET_KEY.test(key) && SESSION_KEY.test(key);
    if ((!session && !UNQUOTED_SECRET_KEY.test(key)) || PROBLEM_KEY.test(key) || SOURCE_FILE_KEY.test(key))
      continue;
    values.lastIndex = match.index + head.length;
    const valueMatch = values.exec(text);
    if (valueMatch === null) continue;
    const [, scheme = '', value = ''] = valueMatch;
    // Quoted, or quoted with escaped quotes inside a JSON string (`PASSWORD=\"two words\"`).
    const quote = value.startsWith('\\"') ? '\\"' : /^["']/.test(value) ? value.charAt(0) : '';
    const unquoted = quote ? value.slice(quote.length, -quote.length) : value;
    if (unquoted === REDACTED || (session && !ID_LIKE.test(unquoted))) continue;
    // `private_key: -----BEGIN ...`: the PEM block's body is masked by its own pattern.
    if (unquoted.startsWith('-----BEGIN')) continue;
    out += `${text.slice(copied, match.index)}${key}${separator}${scheme}${quote}${REDACTED}${quote}`;
    copied = values.lastIndex;
    keys.lastIndex = copied;
  }
  return out + text.slice(copied);
}

/**
 * Masks the values of `Cookie:` headers (every pair) and `Set-Cookie:` headers (the first pair, up
 * to its `;`). Linear: each pair is matched once, from where the previous one ended.
 */
function redactCookieHeaders(text: string): string {
  const headers = new RegExp(COOKIE_HEADER.source, 'gi');
  const pair = new RegExp(COOKIE_PAIR.source, 'y');
  const separator = new RegExp(COOKIE_SEPARATOR.source, 'y');
  let out = '';
  let copied = 0;
  for (let header = headers.exec(text); header !== null; header = headers.exec(text)) {
    const setCookie = header[1] !== undefined;
    pair.lastIndex = header.index + header[0].length;
    for (let match = pair.exec(text); match !== null; match = pair.exec(text)) {
      const [whole, name = '', value = ''] = match;
      const quote = value.startsWith('"') ? '"' : '';
      const inner = quote ? value.slice(1, -1) : value;
      if (inner !== '' && inner !== REDACTED) {
        out += `${text.slice(copied, match.index)}${name}=${quote}${REDACTED}${quote}`;
        copied = match.index + whole.length;
      }
      if (setCookie) break;
      separator.lastIndex = pair.lastIndex;
      if (separator.exec(text) === null) break;
      pair.lastIndex = separator.lastIndex;
    }
    headers.lastIndex = Math.max(headers.lastIndex, pair.lastIndex);
  }
  return out + text.slice(copied);
}

/** A copy of `value` with {@link redactText} applied to every string in it (object keys are kept). */
export function redactStrings<T>(value: T): T {
  return walk(value, false, false) as T;
}

/**
 * The one redaction for data that leaves troupe: run-directory files (`plan.json`,
 * `results.jsonl`, `summary.json`), reports, and attributes of traces. A copy of `value` in which
 * every string under a secret-looking key (`apiKey`, `password`, `token`...) at any depth is
 * replaced, and every other string is masked by shape ({@link redactText}).
 */
export function redactValue<T>(value: T): T {
  return walk(value, true, false) as T;
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
