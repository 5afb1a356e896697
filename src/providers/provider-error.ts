/**
 * Turns what a provider answered (an HTTP status, an error body, an in-stream error event, a
 * network failure) into a typed {@link ProviderError} with `provider`, `status` and `requestId`.
 */
import { ProviderError, type TroupeError } from '../errors.ts';
import { ERROR_BODY_EXCERPT_CHARS, RETRYABLE_STATUSES } from './constants.ts';

/** Codes a provider failure can have. */
export type ProviderErrorCode =
  | 'auth_failed'
  | 'rate_limited'
  | 'context_overflow'
  | 'bad_request'
  | 'server_error'
  | 'bad_response'
  | 'timeout'
  | 'cancelled';

/** Where an error came from, for its fields. */
export interface ErrorOrigin {
  readonly provider: string;
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
  if (origin.status !== undefined) fields.status = origin.status;
  if (origin.requestId !== undefined) fields.requestId = origin.requestId;
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) fields[key] = value;
  return new ProviderError(code, message, fields, cause === undefined ? undefined : { cause });
}

/** Maps an HTTP status to an error code; `message` refines 400s into `context_overflow`. */
export function codeForStatus(status: number, message: string, apiCode?: string): ProviderErrorCode {
  if (status === 401 || status === 403) return 'auth_failed';
  if (status === 429) return 'rate_limited';
  if (status === 408) return 'timeout';
  if (status === 413 || apiCode === 'context_length_exceeded' || CONTEXT_OVERFLOW.test(message)) {
    if (status < 500) return 'context_overflow';
  }
  if (status >= 500 || status === 409) return 'server_error';
  return 'bad_request';
}

/** Maps an API error `type` (OpenAI `error.type`/`error.code`, Anthropic `error.type`) to a code. */
export function codeForErrorType(type: string | undefined, message: string): ProviderErrorCode {
  switch (type) {
    case 'authentication_error':
    case 'permission_error':
    case 'invalid_api_key':
      return 'auth_failed';
    case 'rate_limit_error':
    case 'rate_limit_exceeded':
    case 'insufficient_quota':
    case 'tokens':
    case 'requests':
      return 'rate_limited';
    case 'request_too_large':
    case 'context_length_exceeded':
      return 'context_overflow';
    case 'invalid_request_error':
    case 'not_found_error':
      return CONTEXT_OVERFLOW.test(message) ? 'context_overflow' : 'bad_request';
    default:
      return 'server_error';
  }
}

/** Seconds or milliseconds the server asked us to wait (`retry-after-ms`, `retry-after`). */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return Math.round(value);
  }
  const header = headers.get('retry-after');
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
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

/** Reads `{error: {message, type, code}}` (OpenAI) or `{type: 'error', error: {...}}` (Anthropic). */
export function readApiError(body: unknown): ApiErrorBody | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const error = (body as { error?: unknown }).error;
  if (typeof error === 'string') return { message: error, type: undefined, code: undefined };
  if (typeof error !== 'object' || error === null) return undefined;
  const { message, type, code } = error as { message?: unknown; type?: unknown; code?: unknown };
  return {
    message: typeof message === 'string' ? message : JSON.stringify(error),
    type: typeof type === 'string' ? type : undefined,
    code: typeof code === 'string' ? code : undefined,
  };
}

/** Builds the error for a non-2xx response; reads (and so releases) the response body. */
export async function errorFromResponse(provider: string, response: Response): Promise<ProviderError> {
  const origin = { provider, status: response.status, requestId: requestIdOf(response.headers) };
  const text = await response.text().catch(() => '');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const api = readApiError(parsed);
  const detail = api?.message ?? (text.slice(0, ERROR_BODY_EXCERPT_CHARS) || response.statusText);
  const code = codeForStatus(response.status, detail, api?.code);
  const retryAfterMs = parseRetryAfter(response.headers);
  return providerError(code, `${provider} answered HTTP ${response.status}: ${detail}`, origin, {
    type: api?.type,
    apiCode: api?.code,
    retryAfterMs: code === 'rate_limited' || retryAfterMs !== undefined ? retryAfterMs : undefined,
  });
}

/** Builds the error for an error object the provider sent inside a successful (200) stream. */
export function errorFromStreamPayload(origin: ErrorOrigin, body: unknown): ProviderError {
  const api = readApiError(body) ?? { message: JSON.stringify(body), type: undefined, code: undefined };
  const code = codeForErrorType(api.type ?? api.code, api.message);
  return providerError(code, `${origin.provider} reported an error in the stream: ${api.message}`, origin, {
    type: api.type,
    apiCode: api.code,
  });
}

/** True for failures that may succeed on a fresh attempt. */
export function isRetryable(error: TroupeError): boolean {
  const status = error.fields.status;
  if (typeof status === 'number' && (RETRYABLE_STATUSES.has(status) || status >= 500)) return true;
  return error.code === 'rate_limited' || error.code === 'server_error';
}

/** Builds the error for a connection that failed (refused, reset, closed mid-body). */
export function networkError(origin: ErrorOrigin, error: unknown): ProviderError {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : undefined;
  const errno = (cause as { code?: unknown } | undefined)?.code;
  const what = error instanceof Error ? error.message : String(error);
  const detail = cause === undefined ? what : `${what} (${cause.message})`;
  return providerError(
    'server_error',
    `The connection to ${origin.provider} failed: ${detail}`,
    origin,
    { network: true, errno: typeof errno === 'string' ? errno : undefined },
    error,
  );
}
