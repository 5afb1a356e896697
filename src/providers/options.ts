/** Validation of provider options at the boundary: wrong values fail early with `invalid_option`. */

import { sleep } from '../abort.ts';
import { MAX_TIMER_MS } from '../constants.ts';
import { describeValue, UserError } from '../errors.ts';
import { REDACTED } from '../journal/constants.ts';
import {
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_CHARS,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_MAX_RETRIES,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_RETRY_BASE_DELAY_MS,
  DEFAULT_RETRY_MAX_DELAY_MS,
  MAX_PROVIDER_RETRIES,
} from './constants.ts';
import type { HttpClient, HttpProviderOptions } from './http.ts';

function invalid(provider: string, option: string, expected: string, value: unknown): UserError {
  return new UserError(
    'invalid_option',
    `Expected \`${option}\` to be ${expected}, got ${describeValue(value)}.`,
    {
      provider,
      option,
    },
  );
}

/** Checks that `options[name]`, when present, is a number meeting `min` (and an integer if asked). */
export function checkNumber(
  provider: string,
  options: object,
  name: string,
  rule: { readonly min: number; readonly integer?: boolean; readonly max?: number },
): void {
  const value = (options as Record<string, unknown>)[name];
  if (value === undefined) return;
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    value >= rule.min &&
    (rule.max === undefined || value <= rule.max) &&
    (!rule.integer || Number.isInteger(value));
  if (!ok) {
    const range = rule.max === undefined ? `>= ${rule.min}` : `between ${rule.min} and ${rule.max}`;
    throw invalid(provider, name, `${rule.integer ? 'an integer' : 'a number'} ${range}`, value);
  }
}

/** Checks that `options[name]`, when present, has the given `typeof`. */
export function checkType(
  provider: string,
  options: object,
  name: string,
  type: 'string' | 'function' | 'boolean' | 'object',
): void {
  const value = (options as Record<string, unknown>)[name];
  if (value === undefined) return;
  if (typeof value !== type || value === null) throw invalid(provider, name, `a ${type}`, value);
}

/** Checks that `options[name]`, when present, is one of `allowed`. */
export function checkOneOf(
  provider: string,
  options: object,
  name: string,
  allowed: readonly string[],
): void {
  const value = (options as Record<string, unknown>)[name];
  if (value === undefined || allowed.includes(value as string)) return;
  throw invalid(provider, name, `one of ${allowed.map((item) => `\`${item}\``).join(', ')}`, value);
}

/** Validates the options shared by HTTP providers (UserError `invalid_option`). */
export function checkHttpOptions(provider: string, options: HttpProviderOptions): void {
  checkNumber(provider, options, 'maxRetries', { min: 0, max: MAX_PROVIDER_RETRIES, integer: true });
  // Past the longest timer delay Node fires at once: such a backoff retried at once, and such a
  // limit failed every request at once.
  checkNumber(provider, options, 'retryBaseDelayMs', { min: 0, max: MAX_TIMER_MS });
  checkNumber(provider, options, 'retryMaxDelayMs', { min: 0, max: MAX_TIMER_MS });
  checkNumber(provider, options, 'timeoutMs', { min: 1, max: MAX_TIMER_MS });
  checkNumber(provider, options, 'idleTimeoutMs', { min: 1, max: MAX_TIMER_MS });
  checkNumber(provider, options, 'maxResponseBytes', { min: 1, integer: true });
  checkNumber(provider, options, 'maxOutputChars', { min: 1, integer: true });
  checkType(provider, options, 'headers', 'object');
  checkType(provider, options, 'sleep', 'function');
  checkType(provider, options, 'random', 'function');
  checkType(provider, options, 'onRateLimited', 'function');
  checkType(provider, options, 'admission', 'object');
}

/** The HTTP client settings of validated options ({@link checkHttpOptions}), defaults filled. */
export function prepareHttpClient(provider: string, options: HttpProviderOptions): HttpClient {
  return {
    provider,
    retry: {
      maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
      baseDelayMs: options.retryBaseDelayMs ?? DEFAULT_RETRY_BASE_DELAY_MS,
      maxDelayMs: options.retryMaxDelayMs ?? DEFAULT_RETRY_MAX_DELAY_MS,
    },
    sleep: options.sleep ?? sleep,
    random: options.random ?? Math.random,
    admission: options.admission,
    onRateLimited: options.onRateLimited,
    timeoutMs: options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    maxOutputChars: options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS,
  };
}

/** An environment variable, treating an empty value as unset. */
export function envValue(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/**
 * Joins a base URL and a path without doubling or dropping the slash. The path goes before the
 * base's query, which is kept (`http://h/v1?api-version=1` and `chat/completions` give
 * `http://h/v1/chat/completions?api-version=1`, as the OpenAI SDK does); a fragment is dropped.
 */
export function joinUrl(base: string, path: string): string {
  const hash = base.indexOf('#');
  const noFragment = hash === -1 ? base : base.slice(0, hash);
  const mark = noFragment.indexOf('?');
  const origin = mark === -1 ? noFragment : noFragment.slice(0, mark);
  const query = mark === -1 ? '' : noFragment.slice(mark);
  return `${origin.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}${query === '?' ? '' : query}`;
}

/** What a base URL must be, for messages. */
const BASE_URL_EXPECTED = 'an absolute http(s) URL such as `http://localhost:8080/v1`';

/** Whether `value` is an absolute `http:` or `https:` URL with a host (not `localhost:8080/v1`). */
function isHttpURL(value: string): boolean {
  // The scheme and `//` written out: the URL parser reads `localhost:8080/v1` as scheme
  // `localhost:`, and `http:host` as `http://host/`.
  if (!/^\s*https?:\/\//i.test(value)) return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * A URL as an error message shows it: its user info (`user:password@`), query and fragment
 * masked, where a base URL may carry a credential; works on text that does not parse as a URL.
 */
export function maskedURL(value: string): string {
  return value
    .replace(/([?#])[\s\S]*$/, `$1${REDACTED}`)
    .replace(/^([^/?#@]*\/\/)?[^/?#]*@/, `$1${REDACTED}@`);
}

/**
 * Checks `options.baseURL`, when present, is an absolute http(s) URL (UserError `invalid_option`,
 * fields `provider`, `option`); its value is shown masked ({@link maskedURL}).
 */
export function checkBaseURL(provider: string, options: { readonly baseURL?: unknown }): void {
  const value = options.baseURL;
  if (typeof value === 'string' && !isHttpURL(value)) {
    throw invalid(provider, 'baseURL', BASE_URL_EXPECTED, maskedURL(value));
  }
}

/**
 * The base URL a provider uses, trimmed: `baseURL` (checked by {@link checkBaseURL}), else the environment
 * variable `variable` (blank counts as unset), else `fallback`. UserError `invalid_option` (fields
 * `provider`, `option` = the variable) when the variable holds no absolute http(s) URL: else
 * every request failed with a network error naming a URL the user never wrote.
 */
export function resolveBaseURL(
  provider: string,
  baseURL: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  variable: string,
  fallback: string,
): string {
  // Trimmed as the variable is: a trailing space would end up inside the request path.
  if (baseURL !== undefined) return baseURL.trim();
  const value = envValue(env, variable);
  if (value === undefined) return fallback;
  if (!isHttpURL(value)) throw invalid(provider, variable, BASE_URL_EXPECTED, maskedURL(value));
  return value;
}

/**
 * Whether `baseURL` points at the same origin (scheme, host, port) as `official`, whatever its
 * path, trailing slash, query or case: a request there without a key can only fail with 401.
 */
export function isOfficialBaseURL(baseURL: string, official: string): boolean {
  try {
    return new URL(baseURL).origin === new URL(official).origin;
  } catch {
    return false;
  }
}
