/**
 * A strict, deterministic model for tests: every model request consumes the next scripted step.
 * It records every request (with the tool results it carried), fails a request it has no step
 * for with an `unexpected_call` error, and reports unused steps.
 */

import { abortable, sleep as defaultSleep } from '../abort.ts';
import { MAX_TIMER_MS } from '../constants.ts';
import { describeValue, ProviderError, UserError } from '../errors.ts';
import { extend } from '../objects.ts';
import { timerDelay } from '../option-checks.ts';
import type { ToolSpec } from '../tools/types.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS } from './constants.ts';
import { MODEL_SETTING_KEYS, type ModelSettings, mergeModelSettings } from './model-settings.ts';
import { checkNumber, checkType } from './options.ts';
import { DEFAULT_PRICES, type ModelPrice, type PriceTable, priceFor } from './pricing.ts';
import { ZERO_USAGE } from './receipt.ts';
import { toolCall } from './tool-arguments.ts';
import { createTurn, type ExchangeContext, type ModelResponse, type ToolResult } from './turn-runner.ts';
import type { Provider, ReasoningEffort, StopReason, ToolChoice, Turn, TurnRequest, Usage } from './types.ts';

/** A tool call a scripted step makes. */
export interface ScriptedToolCall {
  /** @default `call_<request index>_<position>` */
  readonly id?: string;
  /** An object, or a raw string to script malformed arguments. @default {} */
  readonly arguments?: Readonly<Record<string, unknown>> | string;
  readonly name: string;
}

/** An error a scripted step fails with (a ProviderError with this code and fields). */
export interface ScriptedError {
  readonly code: string;
  readonly message?: string;
  readonly fields?: Readonly<Record<string, unknown>>;
}

/** What one model request answers. */
export interface ScriptedResponse {
  readonly text?: string;
  readonly reasoning?: string;
  readonly toolCalls?: readonly ScriptedToolCall[];
  /** Reported as the request's usage (missing counts are 0). No usage event when omitted. */
  readonly usage?: Partial<Usage>;
  /** @default `tool_calls` when the step has tool calls, else `end_turn` */
  readonly stopReason?: StopReason;
  /**
   * Waits this long before answering, as a slow model would: a cancellation ends the wait, and a
   * wait past the request's time limit (`timeoutMs`) fails the request with `timeout`.
   * `Infinity` never answers (the request then ends at its limit or its cancellation).
   */
  readonly delayMs?: number;
  /** Fails the request instead of answering. */
  readonly error?: ScriptedError;
}

/** A recorded model request, as a step function receives it. */
export interface ScriptedRequest {
  /** 0-based position among all requests this provider received. */
  readonly index: number;
  /** 0-based number of the turn the request belongs to. */
  readonly turn: number;
  readonly model: string;
  readonly system: string;
  readonly input: string;
  readonly tools: readonly ToolSpec[];
  readonly toolChoice: ToolChoice | undefined;
  readonly reasoningEffort: ReasoningEffort | undefined;
  readonly maxOutputTokens: number | undefined;
  readonly temperature: number | undefined;
  /** Every model setting the request carried (the three above included). */
  readonly settings: ModelSettings;
  /** The tool results this request carries back (empty on the first request of a turn). */
  readonly toolResults: readonly ToolResult[];
}

/**
 * A step: a fixed response, or a function of the request (which may also check it). A function's
 * promise counts as the model's time: it is timed like `delayMs`, and a cancellation stops the
 * wait for it.
 */
export type ScriptedStep =
  | ScriptedResponse
  | ((request: ScriptedRequest) => ScriptedResponse | Promise<ScriptedResponse>);

/** Options of {@link ScriptedProvider}. */
export interface ScriptedProviderOptions {
  /** @default 'scripted' */
  readonly name?: string;
  /** Used for `delayMs`; tests may inject a fake one. @default a timer that honours the signal */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Prices for receipts, looked up by the request's model. @default DEFAULT_PRICES */
  readonly prices?: PriceTable;
  /**
   * Longest one request may take (its step function's promise and its `delayMs`), as an HTTP
   * provider's `timeoutMs`: then it fails with ProviderError `timeout` (`fields.timeoutMs`). A
   * request's own `TurnRequest.timeoutMs` wins. An integer from 1 to 2147483647.
   * @default 600000 (`DEFAULT_REQUEST_TIMEOUT_MS`)
   */
  readonly timeoutMs?: number;
}

/** The strict scripted model. */
export class ScriptedProvider implements Provider {
  readonly name: string;
  readonly #steps: ScriptedStep[];
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly #prices: PriceTable;
  readonly #timeoutMs: number;
  readonly #requests: ScriptedRequest[] = [];
  readonly #problems: string[] = [];
  #used = 0;
  #turns = 0;

  /** Throws UserError `invalid_option` (fields `provider`, `option`) for a bad `timeoutMs` or `sleep`. */
  constructor(steps: readonly ScriptedStep[] = [], options: ScriptedProviderOptions = {}) {
    this.name = options.name ?? 'scripted';
    checkNumber(this.name, options, 'timeoutMs', { min: 1, integer: true, max: MAX_TIMER_MS });
    checkType(this.name, options, 'sleep', 'function');
    this.#steps = [...steps];
    this.#sleep = options.sleep ?? defaultSleep;
    this.#prices = options.prices ?? DEFAULT_PRICES;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  /** Appends steps to the script. */
  push(...steps: ScriptedStep[]): void {
    this.#steps.push(...steps);
  }

  /** Every request received so far, unexpected ones included. */
  get requests(): readonly ScriptedRequest[] {
    return this.#requests;
  }

  /** Steps no request has consumed yet. */
  unusedSteps(): readonly ScriptedStep[] {
    return this.#steps.slice(this.#used);
  }

  /**
   * Throws a UserError when a step was left unused (`unused_steps`) or a request went wrong
   * (`unexpected_call`: a request with no step left, or a step function that threw).
   */
  assertAllUsed(): void {
    if (this.#problems.length > 0) {
      throw new UserError(
        'unexpected_call',
        `The scripted provider saw problems:\n- ${this.#problems.join('\n- ')}`,
        {
          provider: this.name,
          problems: [...this.#problems],
        },
      );
    }
    const unused = this.#steps.length - this.#used;
    if (unused > 0) {
      throw new UserError(
        'unused_steps',
        `Expected every scripted step to be used, got ${unused} unused of ${this.#steps.length}.`,
        { provider: this.name, unused },
      );
    }
  }

  priceOf(model: string): ModelPrice | undefined {
    return priceFor(model, this.#prices);
  }

  turn(request: TurnRequest, signal?: AbortSignal): Turn {
    const turnNumber = this.#turns;
    this.#turns += 1;
    return createTurn(
      {
        provider: this.name,
        model: request.model,
        price: this.priceOf(request.model),
        // The loop sets no request limit: without its own, a step's `delayMs` (or a step function
        // that never settles) held its agent until a wall clock, unlike any HTTP provider.
        timeoutMs: request.timeoutMs ?? this.#timeoutMs,
        exchange: (results, ctx) => this.#exchange(this.#record(request, turnNumber, results), ctx),
      },
      signal,
    );
  }

  #record(request: TurnRequest, turn: number, toolResults: readonly ToolResult[]): ScriptedRequest {
    const recorded: ScriptedRequest = {
      index: this.#requests.length,
      turn,
      model: request.model,
      system: request.system,
      input: request.input,
      tools: request.tools,
      toolChoice: request.toolChoice,
      reasoningEffort: request.reasoningEffort,
      maxOutputTokens: request.maxOutputTokens,
      temperature: request.temperature,
      settings: mergeModelSettings(
        Object.fromEntries(MODEL_SETTING_KEYS.map((key) => [key, request[key]])) as ModelSettings,
      ),
      toolResults,
    };
    this.#requests.push(recorded);
    return recorded;
  }

  async #exchange(request: ScriptedRequest, ctx: ExchangeContext): Promise<ModelResponse> {
    const step = this.#steps[this.#used];
    if (step === undefined) {
      const message = `The scripted provider received request #${request.index} (turn ${request.turn}) but has no step left (${this.#steps.length} scripted).`;
      this.#problems.push(message);
      throw new ProviderError('unexpected_call', message, {
        provider: this.name,
        requestIndex: request.index,
      });
    }
    const position = this.#used;
    this.#used += 1;
    let produced: ScriptedResponse | PromiseLike<ScriptedResponse>;
    try {
      produced = typeof step === 'function' ? step(request) : step;
    } catch (error) {
      throw this.#stepThrew(position, request, error);
    }
    // A fixed step without a delay answers at once, without a timer.
    if (!isPromiseLike(produced) && !(this.#delayOf(produced, position, request) > 0)) {
      return this.#answer(request, produced, ctx);
    }
    const pending = produced;
    // One time limit for the step function and the delay together, as for one HTTP request.
    const response = await ctx.withTimeout(async (signal) => {
      const settled = await this.#settle(pending, position, request, signal);
      const delayMs = this.#delayOf(settled, position, request);
      // Past the longest timer, Node fires at once: the request limit (at most that) ends it first.
      if (delayMs > 0) await this.#sleep(timerDelay(delayMs), signal);
      return settled;
    });
    return this.#answer(request, response, ctx);
  }

  /** The response a step function's promise settles with; a cancellation or time limit stops the wait. */
  async #settle(
    produced: ScriptedResponse | PromiseLike<ScriptedResponse>,
    position: number,
    request: ScriptedRequest,
    signal: AbortSignal,
  ): Promise<ScriptedResponse> {
    if (!isPromiseLike(produced)) return produced;
    try {
      return await abortable(Promise.resolve(produced), signal);
    } catch (error) {
      // Ended by the turn or its time limit: not the step's fault.
      if (signal.aborted) throw error;
      throw this.#stepThrew(position, request, error);
    }
  }

  /** The step's `delayMs` (0 when absent); a value that is no delay is a problem of the script. */
  #delayOf(response: ScriptedResponse, position: number, request: ScriptedRequest): number {
    const { delayMs } = response;
    if (delayMs === undefined) return 0;
    if (typeof delayMs === 'number' && delayMs >= 0) return delayMs;
    const message = `Step ${position} on request #${request.index}: expected \`delayMs\` to be a non-negative number of milliseconds, got ${describeValue(delayMs)}`;
    this.#problems.push(message);
    throw new ProviderError('unexpected_call', message, { provider: this.name, requestIndex: request.index });
  }

  #stepThrew(position: number, request: ScriptedRequest, error: unknown): ProviderError {
    const reason = error instanceof Error ? error.message : String(error);
    const message = `Step ${position} threw on request #${request.index}: ${reason}`;
    this.#problems.push(message);
    return new ProviderError('unexpected_call', message, {
      provider: this.name,
      requestIndex: request.index,
    });
  }

  #answer(request: ScriptedRequest, response: ScriptedResponse, ctx: ExchangeContext): ModelResponse {
    if (response.error !== undefined) {
      const { code, message, fields } = response.error;
      throw new ProviderError(code, message ?? `Scripted ${code} error.`, { provider: this.name, ...fields });
    }
    if (response.reasoning) ctx.emit({ type: 'reasoning_delta', text: response.reasoning });
    const text = response.text ?? '';
    if (text !== '') ctx.emit({ type: 'text_delta', text });
    const toolCalls = (response.toolCalls ?? []).map((call, position) => {
      const raw = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {});
      return toolCall(call.id ?? `call_${request.index}_${position}`, call.name, raw);
    });
    if (response.usage !== undefined) ctx.reportUsage(extend(ZERO_USAGE, response.usage));
    const stopReason = response.stopReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'end_turn');
    return { text, toolCalls, stopReason };
  }
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
