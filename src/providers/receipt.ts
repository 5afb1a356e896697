/** Accumulates a turn's receipt over its model requests. */
import {
  HIDDEN_REASONING_TOKEN_ALLOWANCE,
  OUTPUT_TOKEN_SLACK,
  RETRY_LOG_MAX,
  TOOL_CALL_TOKEN_ALLOWANCE,
} from './constants.ts';
import { estimateTokens } from './estimate.ts';
import { costOf, type ModelPrice } from './pricing.ts';
import { noteReportedOutput } from './request-attempts.ts';
import type { Receipt, RetryRecord, Usage, UsageSide } from './types.ts';

/** Usage with every count at zero. */
export const ZERO_USAGE: Usage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  reasoningTokens: 0,
});

/**
 * Sums two usages; the sum is `estimated` when either part is, with the `estimatedSide` both
 * estimated parts share (none when one estimated both sides or they estimated different ones).
 */
export function addUsage(a: Usage, b: Usage): Usage {
  const estimated = a.estimated === true || b.estimated === true;
  // Summed for every request of a turn: no arrays. A part estimated on both sides has no side.
  const side =
    a.estimated !== true
      ? b.estimatedSide
      : b.estimated !== true || a.estimatedSide === b.estimatedSide
        ? a.estimatedSide
        : undefined;
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
    reasoningTokens: a.reasoningTokens + b.reasoningTokens,
    ...(estimated ? { estimated: true } : {}),
    ...(estimated && side !== undefined ? { estimatedSide: side } : {}),
  };
}

/** Usage as a server sent it: a side it left unreadable is undefined (see `asCount`). */
export interface ReportedUsage {
  readonly inputTokens: number | undefined;
  readonly outputTokens: number | undefined;
  readonly cachedInputTokens: number;
  readonly reasoningTokens: number;
}

/** `later` over `earlier`, side by side: a side `later` left unreadable keeps `earlier`'s count. */
export function mergeUsage(
  earlier: ReportedUsage | undefined,
  later: ReportedUsage | undefined,
): ReportedUsage | undefined {
  if (earlier === undefined || later === undefined) return later ?? earlier;
  return {
    inputTokens: later.inputTokens ?? earlier.inputTokens,
    outputTokens: later.outputTokens ?? earlier.outputTokens,
    cachedInputTokens: later.inputTokens === undefined ? earlier.cachedInputTokens : later.cachedInputTokens,
    reasoningTokens: later.outputTokens === undefined ? earlier.reasoningTokens : later.reasoningTokens,
  };
}

/** What one request streamed: text, reasoning and tool-call arguments. */
export interface StreamedOutput {
  /** UTF-16 characters (what `maxOutputChars` bounds and the rough estimate counts). */
  readonly chars: number;
  /** Their UTF-8 bytes (at most 3 a character when a driver did not say: `countOutput`). */
  readonly bytes: number;
  /** Tool calls the response made. */
  readonly toolCalls: number;
}

/** What `ctx`'s request streamed, with the tool calls its response's `accumulator` holds. */
export function streamedOutput(
  ctx: { outputChars(): number; outputBytes(): number },
  accumulator: { readonly toolCalls: number },
): StreamedOutput {
  return { chars: ctx.outputChars(), bytes: ctx.outputBytes(), toolCalls: accumulator.toolCalls };
}

/**
 * The most output tokens a request without an output cap can truly have counted, having streamed
 * `output`: one token per UTF-8 byte of it, plus {@link TOOL_CALL_TOKEN_ALLOWANCE} per tool call,
 * plus {@link OUTPUT_TOKEN_SLACK}, plus the hidden reasoning its server reports, up to
 * {@link HIDDEN_REASONING_TOKEN_ALLOWANCE}.
 *
 * One token per byte is a real bound, not a rate: every token of a byte-level BPE vocabulary
 * (OpenAI's o200k and cl100k, Llama 3, Qwen, DeepSeek, Mistral's Tekken) decodes to at least one
 * byte, and so does every piece of a SentencePiece vocabulary with byte fallback (Llama 2,
 * Mistral, Gemma), whose unknown characters are one token per byte. What a model generates and
 * the server does not stream is counted apart: special tokens (end of turn, a reasoning
 * model's `<think>` tags, a stop sequence) in the slack, a tool call's name and wrapper in its
 * allowance, hidden reasoning in its own. Ordinary text takes 3 to 4 bytes a token, so honest
 * counts sit far below; the bound only catches counts no tokenizer could produce. The old bound,
 * 3 tokens a UTF-16 character, was 3 times this one for ASCII.
 */
export function uncappedOutputBound(output: StreamedOutput, reportedReasoningTokens: number): number {
  return (
    output.bytes +
    output.toolCalls * TOOL_CALL_TOKEN_ALLOWANCE +
    OUTPUT_TOKEN_SLACK +
    Math.min(reportedReasoningTokens, HIDDEN_REASONING_TOKEN_ALLOWANCE)
  );
}

/**
 * `reported` with a count the request could not have had (an input above `maxInputTokens`, an
 * output above `maxOutputTokens` or, for a request without an output cap, above
 * {@link uncappedOutputBound} of the `output` it streamed: see `HttpRequest`) left unreadable,
 * so it is estimated like a missing one instead of spending budgets on a lie. Its cached or
 * reasoning share goes with it.
 */
export function plausibleUsage(
  reported: ReportedUsage | undefined,
  bounds: { readonly maxInputTokens: number; readonly maxOutputTokens: number | undefined },
  output: StreamedOutput,
): ReportedUsage | undefined {
  if (reported === undefined) return undefined;
  const { inputTokens, outputTokens } = reported;
  const badInput = inputTokens !== undefined && inputTokens > bounds.maxInputTokens;
  const badOutput =
    outputTokens !== undefined &&
    outputTokens > (bounds.maxOutputTokens ?? uncappedOutputBound(output, reported.reasoningTokens));
  if (!badInput && !badOutput) return reported;
  return {
    inputTokens: badInput ? undefined : inputTokens,
    outputTokens: badOutput ? undefined : outputTokens,
    cachedInputTokens: badInput ? 0 : reported.cachedInputTokens,
    reasoningTokens: badOutput ? 0 : reported.reasoningTokens,
  };
}

/**
 * A request's usage from what its server reported: undefined when it reported neither side
 * readably (the request counts as one without usage); else the unreadable side, if any, is filled
 * from `estimate` and marked (`estimated`, `estimatedSide`). Counting that side as 0 would let a
 * server zero out every request's input, and dropping the readable side would lose a real count.
 * Cached tokens are at most the input, reasoning tokens at most the output.
 */
export function completeUsage(
  reported: ReportedUsage | undefined,
  estimate: { readonly inputTokens: number; readonly outputTokens: number },
): Usage | undefined {
  if (reported === undefined) return undefined;
  const { inputTokens: input, outputTokens: output } = reported;
  if (input === undefined && output === undefined) return undefined;
  const inputTokens = input ?? estimate.inputTokens;
  const outputTokens = output ?? estimate.outputTokens;
  const side: UsageSide | undefined =
    input === undefined ? 'input' : output === undefined ? 'output' : undefined;
  return {
    inputTokens,
    outputTokens,
    cachedInputTokens: Math.min(reported.cachedInputTokens, inputTokens),
    reasoningTokens: Math.min(reported.reasoningTokens, outputTokens),
    ...(side === undefined ? {} : { estimated: true, estimatedSide: side }),
  };
}

/**
 * The usage of an attempt that failed after its server reported some (a stream that broke after
 * Anthropic's `message_start`): the reported input is kept and the output is marked estimated
 * (`estimatedSide: 'output'`), at least what was reported and what `outputEstimate` counts from
 * the streamed output, since the count so far is not the final one; what was reported is noted
 * (`reportedOutputOf`), the floor of the loop's own count. Undefined without a readable input
 * count: the request then counts as one without usage.
 */
export function failedAttemptUsage(
  reported: ReportedUsage | undefined,
  outputEstimate: number,
): Usage | undefined {
  const input = reported?.inputTokens;
  if (reported === undefined || input === undefined) return undefined;
  const outputTokens = Math.max(reported.outputTokens ?? 0, outputEstimate);
  const usage: Usage = {
    inputTokens: input,
    outputTokens,
    cachedInputTokens: Math.min(reported.cachedInputTokens, input),
    reasoningTokens: Math.min(reported.reasoningTokens, outputTokens),
    estimated: true,
    estimatedSide: 'output',
  };
  return reported.outputTokens === undefined ? usage : noteReportedOutput(usage, reported.outputTokens);
}

/** What {@link responseUsage} and {@link brokenResponseUsage} read of a request (an `HttpRequest`). */
interface UsageBounds {
  readonly estimatedInputTokens: number;
  readonly maxInputTokens: number;
  readonly maxOutputTokens: number | undefined;
}

/**
 * A response's usage, read whole: what its server reported, each implausible or missing side
 * estimated (input from the request, output from the `output` it streamed); undefined when it
 * reported neither side readably.
 */
export function responseUsage(
  reported: ReportedUsage | undefined,
  request: UsageBounds,
  output: StreamedOutput,
): Usage | undefined {
  return completeUsage(plausibleUsage(reported, request, output), {
    inputTokens: request.estimatedInputTokens,
    outputTokens: estimateTokens(output.chars),
  });
}

/**
 * The usage of a response that broke off. When `counted` (what was reported counts all the output
 * that arrived) it is charged as reported ({@link responseUsage}): a `whole` body (read in full,
 * then cut at maxOutputChars) carries the server's final count, and a stream whose last output
 * came with (or before) a running total (vLLM's `continuous_usage_stats`, OpenAI's usage chunk
 * before a missing `[DONE]`) carries what the server counted of everything troupe got. Counting
 * the output again from what streamed would swap the server's count for troupe's tokenizer's.
 * Otherwise it is charged as {@link failedAttemptUsage}: output streamed that no count covers.
 */
export function brokenResponseUsage(
  reported: ReportedUsage | undefined,
  request: UsageBounds,
  output: StreamedOutput,
  counted: boolean,
): Usage | undefined {
  if (counted) return responseUsage(reported, request, output);
  return failedAttemptUsage(plausibleUsage(reported, request, output), estimateTokens(output.chars));
}

/** Mutable receipt under construction; {@link ReceiptBuilder.build} freezes a snapshot. */
export class ReceiptBuilder {
  readonly #provider: string;
  readonly #model: string;
  readonly #price: ModelPrice | undefined;
  #requests = 0;
  #usage: Usage = ZERO_USAGE;
  #requestsWithUsage = 0;
  /** The attempt in flight reported usage: its request, once it ends, is one with usage. */
  #attemptReported = false;
  #latencyMs = 0;
  #httpStatus: number | undefined;
  #retries = 0;
  readonly #retryLog: RetryRecord[] = [];
  #queuedMs = 0;
  readonly #startedAt: number;
  readonly #now: () => number;

  constructor(
    provider: string,
    model: string,
    price: ModelPrice | undefined,
    now: () => number = () => performance.now(),
  ) {
    this.#provider = provider;
    this.#model = model;
    this.#price = price;
    this.#now = now;
    this.#startedAt = now();
  }

  /**
   * Counts one model request and the time it took; it is one with usage when its last attempt
   * reported some.
   */
  addRequest(latencyMs: number): void {
    this.#requests += 1;
    this.#latencyMs += latencyMs;
    if (this.#attemptReported) this.#requestsWithUsage += 1;
    this.#attemptReported = false;
  }

  /** Adds the usage an attempt of the request in flight reported. */
  addUsage(usage: Usage): void {
    this.#usage = addUsage(this.#usage, usage);
    this.#attemptReported = true;
  }

  setHttpStatus(status: number): void {
    this.#httpStatus = status;
  }

  /** Counts a retried attempt; with `detail`, describes it in `retryLog` (the first RETRY_LOG_MAX). */
  addRetry(detail?: Omit<RetryRecord, 'atMs'>): void {
    this.#retries += 1;
    this.#attemptReported = false;
    if (detail !== undefined && this.#retryLog.length < RETRY_LOG_MAX)
      this.#retryLog.push({ atMs: Math.round(this.#now() - this.#startedAt), ...detail });
  }

  /** Adds time spent waiting for a provider slot. */
  addQueued(ms: number): void {
    if (Number.isFinite(ms) && ms > 0) this.#queuedMs += ms;
  }

  build(): Receipt {
    const usageComplete = this.#requests > 0 && this.#requestsWithUsage >= this.#requests;
    return {
      provider: this.#provider,
      model: this.#model,
      requests: this.#requests,
      usage: this.#usage,
      latencyMs: Math.round(this.#latencyMs),
      httpStatus: this.#httpStatus,
      retries: this.#retries,
      costUsd: this.#price !== undefined && usageComplete ? costOf(this.#usage, this.#price) : undefined,
      requestsWithoutUsage: Math.max(0, this.#requests - this.#requestsWithUsage),
      ...(this.#retryLog.length > 0 ? { retryLog: [...this.#retryLog] } : {}),
      ...(this.#queuedMs >= 1 ? { queuedMs: Math.round(this.#queuedMs) } : {}),
    };
  }
}
