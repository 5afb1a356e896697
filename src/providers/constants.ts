/** Provider defaults that change behaviour, in one place. */
import type { ReasoningEffort } from './types.ts';

/** Default base URL of the OpenAI API (`OPENAI_BASE_URL` overrides it). */
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';
/** Default base URL of the Anthropic API (`ANTHROPIC_BASE_URL` overrides it). */
export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com';
/** The `anthropic-version` header sent with every Messages request. */
export const ANTHROPIC_VERSION = '2023-06-01';
/** `max_tokens` is required by the Messages API; used when the request gives no `maxOutputTokens`. */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 8192;

/** Model used when a caller asks a provider for its default model. */
export const DEFAULT_MODELS = {
  openai: 'gpt-4.1-mini',
  anthropic: 'claude-sonnet-4-5',
  simulated: 'simulated',
} as const;

/** Retries after the first attempt of a model request. */
export const DEFAULT_MAX_RETRIES = 2;
/** First backoff delay; doubles with every retry. */
export const DEFAULT_RETRY_BASE_DELAY_MS = 500;
/** Cap on one computed backoff delay. */
export const DEFAULT_RETRY_MAX_DELAY_MS = 8000;
/** Share of a computed backoff delay removed at random, so agents do not retry in lockstep. */
export const RETRY_JITTER = 0.25;
/**
 * A server-requested wait longer than this is not slept through: the request fails at once with
 * `rate_limited` and its `retryAfterMs`, so a supervisor can pause the whole key instead.
 */
export const MAX_HONOURED_RETRY_AFTER_MS = 60_000;
/** HTTP statuses retried besides 5xx. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 409, 429]);
/** Default timeout of one model request (stream included) when the request gives none. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 600_000;
/** Characters of an error response body kept in an error message. */
export const ERROR_BODY_EXCERPT_CHARS = 500;

/** Reasoning efforts each provider accepts; anything else is rejected before sending. */
export const SUPPORTED_REASONING_EFFORTS: Readonly<
  Record<'openai' | 'anthropic', readonly ReasoningEffort[]>
> = {
  openai: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'],
  anthropic: ['none', 'low', 'medium', 'high', 'max'],
};
/** Extended-thinking budget (`thinking.budget_tokens`) per effort; `none` disables thinking. */
export const ANTHROPIC_THINKING_BUDGETS: Readonly<Partial<Record<ReasoningEffort, number>>> = {
  low: 1024,
  medium: 4096,
  high: 16_384,
  max: 32_000,
};
