/**
 * Turns what a provider answered (an HTTP status, an error body, an in-stream error event, a
 * network failure) into a typed {@link ProviderError} with `provider`, `status` and `requestId`.
 */
import { ProviderError, readableErrorText, type TroupeError } from '../errors.ts';
import { ERROR_BODY_EXCERPT_CHARS, ERROR_BODY_MAX_BYTES, RETRYABLE_STATUSES } from './constants.ts';

/** Codes a provider failure can have. */
export type ProviderErrorCode =
  | 'auth_failed'
  | 'rate_limited'
  | 'context_overflow'
  | 'bad_request'
  | 'server_error'
  | 'bad_response'
  /** The response exceeded a size bound (`maxResponseBytes`, `maxOutputChars`). */
  | 'response_too_large'
  | 'timeout'
  | 'cancelled';

/** Where an error came from, for its fields. */
export interface ErrorOrigin {
  readonly provider: string;
  /** The request URL, kept in messages and fields so a wrong base URL is easy to spot. */
  readonly url?: string | undefined;
  readonly status?: number | undefined;
  readonly requestId?: string | undefined;
}

const CONTEXT_OVERFLOW =
  /context[_ ]length|context window|maximum context|too many tokens|prompt is too long|input is too long|exceeds the context/i;

/** Builds a provider error whose fields always name the provider, and the status when known. */
export function providerError(
  code: ProviderErrorCode,
  message: string,
  origin: ErrorOrigin,
  extra: Record<string, unknown> = {},
  cause?: unknown,
): ProviderError {
  const fields: Record<string, unknown> = { provider: origin.provider };
  if (origin.url !== undefined) fields.url = origin.url;
  if (origin.status !== undefined) fields.status = origin.status;
  if (origin.requestId !== undefined) fields.requestId = origin.requestId;
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) fields[key] = value;
  return new ProviderError(code, message, fields, cause === undefined ? undefined : { cause });
}

/** What a failure says about itself: an HTTP error status and/or the API's own error object. */
export interface ErrorFacts {
  /** HTTP status of an error response; undefined for an error inside a successful stream. */
  readonly status?: number | undefined;
  /** The API's error `type` (OpenAI `error.type`, Anthropic `error.type`). */
  readonly type?: string | undefined;
  /** The API's error `code` (OpenAI `error.code`). */
  readonly code?: string | undefined;
  readonly message: string;
}

const AUTH = new Set([
  'authentication_error',
  'permission_error',
  'invalid_api_key',
  'invalid_authentication',
  'unauthorized',
]);
const RATE_LIMIT = new Set([
  'rate_limit_error',
  'rate_limit_exceeded',
  'insufficient_quota',
  'tokens',
  'requests',
]);
const CONTEXT = new Set(['request_too_large', 'context_length_exceeded']);
const BAD_REQUEST = new Set(['invalid_request_error', 'not_found_error', 'model_not_found', 'not_found']);

/**
 * The one classification of provider failures, for error responses and for errors inside a
 * stream alike: the API's own `type` and `code` first (an `invalid_api_key` is `auth_failed`
 * wherever it appears), then the HTTP status, then the message (context overflow).
 */
export function classifyError(facts: ErrorFacts): ProviderErrorCode {
  const names = [facts.type, facts.code].filter((name): name is string => name !== undefined);
  const status = facts.status !== undefined && facts.status >= 400 ? facts.status : undefined;
  if (names.some((name) => AUTH.has(name)) || status === 401 || status === 403) return 'auth_failed';
  if (names.some((name) => RATE_LIMIT.has(name)) || status === 429) return 'rate_limited';
  if (status === 408) return 'timeout';
  const overflow =
    status === 413 || names.some((name) => CONTEXT.has(name)) || CONTEXT_OVERFLOW.test(facts.message);
  if (overflow && (status === undefined || status < 500)) return 'context_overflow';
  if (status !== undefined) return status >= 500 || status === 409 ? 'server_error' : 'bad_request';
  if (names.some((name) => BAD_REQUEST.has(name))) return 'bad_request';
  // An error event in a stream that names nothing known (`overloaded_error`, `api_error`, ...).
  return 'server_error';
}

/**
 * Milliseconds the server asked us to wait (`retry-after-ms`, else `retry-after` in seconds or as
 * an HTTP date), or undefined when it gave none readable. A number must be digits (an optional
 * fraction allowed): `-5`, `0x10`, `1e3` and `Infinity` are none (V8's Date.parse took `-5` for a
 * date in 2001, a wait of 0). The wait is at most
 * Number.MAX_SAFE_INTEGER, so an absurd one (`1e308` seconds, a date in the year 9999) stays a
 * finite count in error fields, hooks and journals (Infinity was journalled as `null`).
 */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = delayNumber(headers.get('retry-after-ms'));
  if (ms !== undefined) return clampWait(ms);
  const header = headers.get('retry-after');
  if (header === null || header.trim() === '') return undefined;
  const seconds = delayNumber(header);
  if (seconds !== undefined) return clampWait(seconds * 1000);
  // An HTTP date starts with its day name; Date.parse would read `-5` or `2` as dates of 2001.
  const date = /^\s*[A-Za-z]{3}/.test(header) ? Date.parse(header) : Number.NaN;
  return Number.isNaN(date) ? undefined : clampWait(Math.max(0, date - now));
}

/** A header's non-negative decimal number (digits, an optional fraction), else undefined. */
function delayNumber(value: string | null): number | undefined {
  const text = value?.trim() ?? '';
  return /^\d+(?:\.\d*)?$/.test(text) ? Number(text) : undefined;
}

function clampWait(ms: number): number {
  return Math.min(Math.round(ms), Number.MAX_SAFE_INTEGER);
}

/** The request id a provider put in its response headers. */
export function requestIdOf(headers: Headers): string | undefined {
  return headers.get('x-request-id') ?? headers.get('request-id') ?? undefined;
}

interface ApiErrorBody {
  readonly message: string;
  readonly type: string | undefined;
  readonly code: string | undefined;
}

/**
 * Reads the server's own error: `{error: {message, type, code}}` (OpenAI, Anthropic's
 * `{type: 'error', error}`), a string `error`, or a top-level `message` / `detail` (vLLM, FastAPI
 * servers). Undefined when the body says nothing readable.
 */
export function readApiError(body: unknown): ApiErrorBody | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as {
    error?: unknown;
    message?: unknown;
    detail?: unknown;
    type?: unknown;
    code?: unknown;
  };
  const error = record.error;
  if (typeof error === 'string')
    return { message: error, type: stringOf(record.type), code: stringOf(record.code) };
  if (typeof error === 'object' && error !== null) {
    const { message, type, code } = error as { message?: unknown; type?: unknown; code?: unknown };
    return {
      message: typeof message === 'string' ? message : JSON.stringify(error),
      type: stringOf(type),
      code: stringOf(code),
    };
  }
  const message = stringOf(record.message) ?? stringOf(record.detail);
  if (message === undefined) return undefined;
  const type = stringOf(record.type);
  return { message, type: type === 'error' ? undefined : type, code: stringOf(record.code) };
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** `text` cut to {@link ERROR_BODY_EXCERPT_CHARS} characters, marked when cut. */
export function excerpt(text: string): string {
  return text.length > ERROR_BODY_EXCERPT_CHARS
    ? `${text.slice(0, ERROR_BODY_EXCERPT_CHARS)}... (cut)`
    : text;
}

/**
 * Builds the error for a non-2xx response. Reads at most {@link ERROR_BODY_MAX_BYTES} of the body
 * and cancels the rest: an error body is evidence, not a payload.
 */
export async function errorFromResponse(
  provider: string,
  response: Response,
  url?: string,
): Promise<ProviderError> {
  const origin = { provider, url, status: response.status, requestId: requestIdOf(response.headers) };
  const text = await readPrefix(response, ERROR_BODY_MAX_BYTES);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const api = readApiError(parsed);
  const detail = excerpt(readableErrorText(api?.message ?? (text.trim() || response.statusText)));
  const code = classifyError({ status: response.status, type: api?.type, code: api?.code, message: detail });
  const retryAfterMs = parseRetryAfter(response.headers);
  return providerError(
    code,
    `${provider} answered HTTP ${response.status}${inParentheses(url)}: ${detail}`,
    origin,
    {
      type: api?.type,
      apiCode: api?.code,
      retryAfterMs: code === 'rate_limited' || retryAfterMs !== undefined ? retryAfterMs : undefined,
    },
  );
}

/**
 * Builds the error for a successful (2xx) answer that is not the API's: a content type that is
 * neither an event stream nor JSON (a login page, a proxy's placeholder). Like an error body, at
 * most {@link ERROR_BODY_MAX_BYTES} are read, and an excerpt of it is quoted.
 */
export async function errorFromForeignAnswer(
  origin: ErrorOrigin,
  response: Response,
  contentType: string,
): Promise<ProviderError> {
  const text = await readPrefix(response, ERROR_BODY_MAX_BYTES);
  return providerError(
    'bad_response',
    `${origin.provider} answered HTTP ${response.status} with content-type ${contentType}${inParentheses(origin.url)}, expected an event stream or JSON (is the base URL the API's?): ${bodyExcerpt(text)}`,
    origin,
    { contentType },
  );
}

/** A body as a person should read it in an error: an HTML page as its text, cut, `(empty)` when empty. */
export function bodyExcerpt(text: string): string {
  return excerpt(readableErrorText(text.trim())) || '(empty)';
}

/** ` (url)` for a message ({@link endpointOf}), or '' without a URL. */
export function inParentheses(url: string | undefined): string {
  return url === undefined ? '' : ` (${endpointOf(url)})`;
}

/**
 * A request URL as a message shows it: its origin and path, never its query, fragment or user
 * info, where a base URL may carry a key (`?key=...`, `https://user:key@host`). Enough to tell a
 * wrong base URL; the error's `fields.url` keeps the URL whole.
 */
export function endpointOf(url: string): string {
  try {
    const parsed = new URL(url);
    // Not `origin`: it is "null" for a scheme fetch does not know.
    const host = parsed.host === '' ? '' : `//${parsed.host}`;
    return `${parsed.protocol}${host}${parsed.pathname}`;
  } catch {
    return url.replace(/[?#].*$/s, '').replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/]*@/i, '$1');
  }
}

/** The first `maxBytes` of a body as text (decoded leniently); the rest is cancelled unread. */
async function readPrefix(response: Response, maxBytes: number): Promise<string> {
  const body = response.body;
  if (body === null) return '';
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < maxBytes) {
      const chunk = await reader.read();
      if (chunk.done) break;
      parts.push(chunk.value);
      size += chunk.value.byteLength;
    }
  } catch {
    // A body that fails half-way still says what it said so far.
  } finally {
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
  const bytes = Buffer.concat(parts);
  return new TextDecoder().decode(bytes.subarray(0, Math.min(bytes.length, maxBytes)));
}

/** Builds the error for an error object the provider sent inside a successful (200) stream or body. */
export function errorFromStreamPayload(origin: ErrorOrigin, body: unknown): ProviderError {
  const api = readApiError(body) ?? { message: JSON.stringify(body), type: undefined, code: undefined };
  const message = excerpt(api.message);
  const code = classifyError({ type: api.type, code: api.code, message });
  return providerError(
    code,
    `${origin.provider} reported an error${inParentheses(origin.url)}: ${message}`,
    origin,
    {
      type: api.type,
      apiCode: api.code,
    },
  );
}

/** True for failures that may succeed on a fresh attempt. */
export function isRetryable(error: TroupeError): boolean {
  const status = error.fields.status;
  if (typeof status === 'number' && (RETRYABLE_STATUSES.has(status) || status >= 500)) return true;
  return error.code === 'rate_limited' || error.code === 'server_error';
}

/**
 * The `errno` of a request fetch refused to make: its URL's port is on the fetch standard's list
 * of blocked ports (`http://127.0.0.1:9/v1`). Nothing was sent; no retry can succeed.
 */
export const BAD_PORT_ERRNO = 'ERR_BAD_PORT';

/** Builds the error for a connection that failed (refused, reset, closed mid-body). */
export function networkError(origin: ErrorOrigin, error: unknown): ProviderError {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : undefined;
  const errno = (cause as { code?: unknown } | undefined)?.code;
  // undici's refusal carries no code, only this message.
  if (cause?.message === 'bad port' && errno === undefined) {
    const port = portOf(origin.url);
    return providerError(
      'bad_request',
      `The request to ${origin.provider} was not sent: fetch refuses port ${port} (a port on the fetch standard's blocked list); give the base URL another port`,
      origin,
      { network: true, errno: BAD_PORT_ERRNO },
      error,
    );
  }
  const what = error instanceof Error ? error.message : String(error);
  const detail = cause === undefined ? what : `${what} (${cause.message})`;
  return providerError(
    'server_error',
    `The connection to ${origin.provider}${inParentheses(origin.url)} failed: ${detail}`,
    origin,
    { network: true, errno: typeof errno === 'string' ? errno : undefined },
    error,
  );
}

/** The port of `url` as a URL says it (its scheme's default when none), or `?`. */
function portOf(url: string | undefined): string {
  try {
    const parsed = new URL(url ?? '');
    return parsed.port !== '' ? parsed.port : parsed.protocol === 'https:' ? '443' : '80';
  } catch {
    return '?';
  }
}
