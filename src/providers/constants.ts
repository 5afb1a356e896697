/** Provider defaults that change behaviour, in one place. */
import type { ReasoningEffort } from './model-settings.ts';

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
  /** The same model as the `sonnet` alias (`ANTHROPIC_MODEL_ALIASES`), so `default` and `sonnet` agree. */
  anthropic: 'claude-sonnet-4-6',
  simulated: 'simulated',
} as const;

/**
 * Input tokens a server may count beyond one per byte of the request body: chat templates and
 * Anthropic's tool-use system prompt add tokens the body does not hold. A reported input count
 * above the body's bytes plus this cannot be true (every token of a byte-level tokenizer covers at
 * least one byte) and is read as no count: a server claiming 5,000,000 input tokens for a 9 KB
 * request spent a 1M-token budget, and the run's, in one step.
 */
export const INPUT_TOKEN_OVERHEAD = 4096;
/**
 * Output tokens a server may count beyond the request's output cap (`max_tokens`,
 * `max_completion_tokens`), for the end-of-turn and template tokens some count. A larger output
 * count cannot be true and is read as no count, like an input above {@link INPUT_TOKEN_OVERHEAD}.
 */
export const OUTPUT_TOKEN_SLACK = 1024;
/**
 * UTF-8 bytes one UTF-16 code unit may take: output a driver counts without saying its bytes
 * (`ExchangeContext.countOutput`) is bounded at this many bytes a character.
 */
export const MAX_UTF8_BYTES_PER_CHAR = 3;
/**
 * Output tokens a request without an output cap may count for each tool call beyond the bytes of
 * its streamed arguments: the function's name (OpenAI caps names at 64 characters) and the wrapper
 * an open-weights server parses out of the model's text and never streams (Hermes/Qwen
 * `<tool_call>{"name": ..., "arguments": ...}</tool_call>`, Llama's `<|python_tag|>`, Harmony's
 * `to=functions.x<|channel|>commentary json<|message|>`: 10 to 25 tokens), with whitespace a
 * parser drops when it writes the arguments again.
 */
export const TOOL_CALL_TOKEN_ALLOWANCE = 128;
/**
 * Output tokens a request without an output cap may count beyond what it streamed, for reasoning
 * its server reports (`completion_tokens_details.reasoning_tokens`) but never streams: OpenAI's
 * reasoning models think in hidden tokens, at most 128,000 a request. Only as much as the reported
 * reasoning count is allowed, up to this.
 */
export const HIDDEN_REASONING_TOKEN_ALLOWANCE = 131_072;
/** Retries after the first attempt of a model request. */
export const DEFAULT_MAX_RETRIES = 2;
/**
 * Largest `maxRetries` of an HTTP provider: far past any useful count, and it bounds a loop of
 * retries of a request that keeps failing (`retryBaseDelayMs: 0` retries at once). It had no upper
 * bound before.
 */
export const MAX_PROVIDER_RETRIES = 1000;
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
/**
 * Longest pause of a provider key a rate-limit answer can cause for every agent using it (threads
 * and redis engines). The agent that got the answer fails at once when the server asks for more
 * than {@link MAX_HONOURED_RETRY_AFTER_MS}; the others wait at most this long, then try again
 * themselves. Without a cap, one `Retry-After: 999999` stalled every agent of the key for 11 days.
 */
export const MAX_PROVIDER_PAUSE_MS = 300_000;
/** Retried attempts a receipt describes one by one (`retryLog`); later ones are only counted. */
export const RETRY_LOG_MAX = 32;
/** HTTP statuses retried besides 5xx. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([408, 409, 429]);
/** Default timeout of one model request (stream included) when the request gives none. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 600_000;
/** Characters of an error response body (or of the server's error message) kept in an error. */
export const ERROR_BODY_EXCERPT_CHARS = 500;
/** Bytes of an error response body read at most; the rest is discarded unread. */
export const ERROR_BODY_MAX_BYTES = 64 * 1024;
/**
 * Longest silence allowed while a request is in flight: from sending it to the response headers,
 * and between two chunks of the body. A stalled stream then ends with `timeout` instead of holding
 * the agent and its admission slot for the whole request timeout. Models that think silently for
 * longer before their first token need a larger value.
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;
/**
 * Bytes of one response body read at most (every byte of the stream, framing included). A server
 * that sends more ends the request with `response_too_large`.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
/**
 * Characters of model output one request may stream: text, reasoning and tool-call arguments
 * together. Far above any model's output limit (128k tokens are about 512k characters), low enough
 * that a server streaming without end is cut off long before it exhausts memory.
 */
export const DEFAULT_MAX_OUTPUT_CHARS = 2_000_000;
/**
 * Tool calls one model response may ask for. Models ask for a handful at a time (tens at most);
 * a server answering 100,000 calls in one body kept an agent's thread busy for 18 s and wrote a
 * 92 MB journal before its context budget ended it. More is `response_too_large`.
 */
export const MAX_TOOL_CALLS_PER_RESPONSE = 512;
/**
 * Characters of a tool call's name, and of its id, one response may give. Tool names are at most
 * 64 characters on OpenAI's and Anthropic's APIs and ids a few dozen; neither counts toward
 * `maxOutputChars` (an output count's bound allows for a name apart: TOOL_CALL_TOKEN_ALLOWANCE), so
 * without this a server naming 30 calls with 1 MB names each wrote a 120 MB journal and a 30M-token
 * input before the context budget ended the agent. More is `response_too_large`.
 */
export const MAX_TOOL_CALL_NAME_CHARS = 1024;
/** Bytes one server-sent event (or one non-streamed JSON body) may hold before it is complete. */
export const MAX_EVENT_BYTES = 8 * 1024 * 1024;

/**
 * Stop sequences one request may carry (`modelSettings.stop`). OpenAI accepts 4; the bound keeps
 * a generated or mistaken list from bloating every request of an agent.
 */
export const MAX_STOP_SEQUENCES = 16;
/** Characters of one stop sequence. */
export const MAX_STOP_SEQUENCE_CHARS = 1000;
/** Stop sequences the OpenAI Chat Completions API accepts in one request. */
export const OPENAI_MAX_STOP_SEQUENCES = 4;
/** Anthropic's `temperature` range ends here (OpenAI's at 2). */
export const ANTHROPIC_MAX_TEMPERATURE = 1;
/** With extended thinking on, Anthropic accepts `top_p` only from here to 1. */
export const ANTHROPIC_THINKING_MIN_TOP_P = 0.95;

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
