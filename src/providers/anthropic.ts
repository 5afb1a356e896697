/** Anthropic Messages provider over SSE, with a JSON fallback for non-streaming answers. */
import { UserError } from '../errors.ts';
import { extend } from '../objects.ts';
import {
  type AnthropicContentBlock,
  MessagesStreamAccumulator,
  messageAsEvents,
} from './anthropic-stream.ts';
import {
  ANTHROPIC_MAX_TEMPERATURE,
  ANTHROPIC_THINKING_BUDGETS,
  ANTHROPIC_THINKING_MIN_TOP_P,
  ANTHROPIC_VERSION,
  DEFAULT_ANTHROPIC_BASE_URL,
  DEFAULT_ANTHROPIC_MAX_TOKENS,
} from './constants.ts';
import { registerCredentials } from './credentials.ts';
import {
  type HttpClient,
  type HttpProviderOptions,
  type HttpRequest,
  isJsonResponse,
  jsonRequest,
  postWithRetries,
  type ResponseReading,
  readJsonBody,
  refuseForeignAnswer,
} from './http.ts';
import { asCount } from './json-shapes.ts';
import type { ModelSettingIssue, ModelSettings } from './model-settings.ts';
import {
  checkBaseURL,
  checkHttpOptions,
  checkType,
  envValue,
  isOfficialBaseURL,
  joinUrl,
  prepareHttpClient,
  resolveBaseURL,
} from './options.ts';
import { DEFAULT_PRICES, type ModelPrice, type PriceTable, priceFor } from './pricing.ts';
import { type ErrorOrigin, endpointOf, inParentheses, providerError, requestIdOf } from './provider-error.ts';
import { brokenResponseUsage, responseUsage, streamedOutput } from './receipt.ts';
import { reasoningEffortIssue, settingsPreflightError } from './settings-support.ts';
import { parseEventData, readServerSentEvents } from './sse.ts';
import { createTurn, type ExchangeContext, type ModelResponse } from './turn-runner.ts';
import type { Provider, ToolChoice, Turn, TurnRequest, Usage } from './types.ts';

/** Options of {@link AnthropicProvider}. */
export interface AnthropicProviderOptions extends HttpProviderOptions {
  /** @default `ANTHROPIC_BASE_URL`, else `https://api.anthropic.com` */
  readonly baseURL?: string;
  /** Sent as `x-api-key`. @default `ANTHROPIC_API_KEY` */
  readonly apiKey?: string;
  /** Name in receipts, errors and rate-limit keys. @default 'anthropic' */
  readonly name?: string;
  /** Request an SSE stream; `false` asks for one JSON body. @default true */
  readonly stream?: boolean;
  /** Prices for receipts. @default DEFAULT_PRICES */
  readonly prices?: PriceTable;
  /** Where `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY` are read. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

type MessageParam =
  | { readonly role: 'user'; readonly content: string | readonly ToolResultBlock[] }
  | { readonly role: 'assistant'; readonly content: readonly AnthropicContentBlock[] };

interface ToolResultBlock {
  readonly type: 'tool_result';
  readonly tool_use_id: string;
  readonly content: string;
}

function toolChoiceParam(choice: ToolChoice): unknown {
  if (choice === 'required') return { type: 'any' };
  if (typeof choice === 'string') return { type: choice };
  return { type: 'tool', name: choice.tool };
}

/**
 * Checks the options of an anthropic provider without building one: UserError `invalid_option`
 * (fields `provider`, `option`) for a value of the wrong type, or a `baseURL` that is not an
 * absolute http(s) URL. A missing API key, and the base URL variable, are not checked:
 * the environment of the thread that builds the provider decides.
 */
export function checkAnthropicOptions(options: AnthropicProviderOptions = {}): void {
  const name = options.name ?? 'anthropic';
  for (const key of ['baseURL', 'apiKey', 'name'] as const) checkType(name, options, key, 'string');
  checkBaseURL(name, options);
  checkType(name, options, 'stream', 'boolean');
  checkHttpOptions(name, options);
}

/** A provider speaking the Anthropic Messages API. */
export class AnthropicProvider implements Provider {
  readonly name: string;
  readonly #url: string;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #client: HttpClient;
  readonly #stream: boolean;
  readonly #prices: PriceTable;

  constructor(options: AnthropicProviderOptions = {}) {
    checkAnthropicOptions(options);
    const name = options.name ?? 'anthropic';
    const env = options.env ?? process.env;
    const baseURL = resolveBaseURL(
      name,
      options.baseURL,
      env,
      'ANTHROPIC_BASE_URL',
      DEFAULT_ANTHROPIC_BASE_URL,
    );
    const apiKey = options.apiKey ?? envValue(env, 'ANTHROPIC_API_KEY');
    if (apiKey === undefined && isOfficialBaseURL(baseURL, DEFAULT_ANTHROPIC_BASE_URL)) {
      throw new UserError(
        'missing_api_key',
        'The anthropic provider needs an API key: set ANTHROPIC_API_KEY or pass `apiKey`.',
        {
          provider: name,
          option: 'apiKey',
        },
      );
    }
    this.name = name;
    // Masked wherever they appear from now on: a 401 body that echoes the key goes to the journal.
    registerCredentials(apiKey, options.headers);
    this.#client = prepareHttpClient(name, options);
    this.#url = joinUrl(baseURL, 'v1/messages');
    this.#headers = {
      'content-type': 'application/json',
      accept: 'text/event-stream, application/json',
      'anthropic-version': ANTHROPIC_VERSION,
      ...(apiKey !== undefined && { 'x-api-key': apiKey }),
      ...options.headers,
    };
    this.#stream = options.stream ?? true;
    this.#prices = options.prices ?? DEFAULT_PRICES;
  }

  priceOf(model: string): ModelPrice | undefined {
    return priceFor(model, this.#prices);
  }

  /**
   * The Messages API has no seed (dropped) and no presence or frequency penalties; its temperature
   * ends at 1; with extended thinking on (a `reasoningEffort` other than `none`) it refuses any
   * `temperature` but 1, a `topP` below 0.95 and any `topK`.
   */
  checkModelSettings(settings: ModelSettings): readonly ModelSettingIssue[] {
    const issues: ModelSettingIssue[] = [];
    const unsupported = (setting: keyof ModelSettings, message: string) =>
      issues.push({ setting, kind: 'unsupported', message: `${this.name}: ${message}` });
    const effort = reasoningEffortIssue('anthropic', this.name, settings.reasoningEffort);
    if (effort) issues.push(effort);
    if (settings.temperature !== undefined && settings.temperature > ANTHROPIC_MAX_TEMPERATURE) {
      unsupported(
        'temperature',
        `Expected \`temperature\` from 0 to ${ANTHROPIC_MAX_TEMPERATURE}, got ${settings.temperature}.`,
      );
    }
    for (const setting of ['presencePenalty', 'frequencyPenalty'] as const) {
      if (settings[setting] !== undefined)
        unsupported(setting, `the Messages API has no \`${setting}\`; leave it out.`);
    }
    const thinking =
      settings.reasoningEffort !== undefined &&
      ANTHROPIC_THINKING_BUDGETS[settings.reasoningEffort] !== undefined;
    if (thinking) {
      const why = `with extended thinking on (reasoningEffort ${settings.reasoningEffort})`;
      if (settings.temperature !== undefined && settings.temperature !== 1)
        unsupported('temperature', `\`temperature\` must be 1 or unset ${why}.`);
      if (settings.topP !== undefined && settings.topP < ANTHROPIC_THINKING_MIN_TOP_P)
        unsupported('topP', `\`topP\` must be from ${ANTHROPIC_THINKING_MIN_TOP_P} to 1 ${why}.`);
      if (settings.topK !== undefined) unsupported('topK', `\`topK\` cannot be set ${why}.`);
    }
    if (settings.seed !== undefined) {
      issues.push({
        setting: 'seed',
        kind: 'dropped',
        message: `${this.name}: the Messages API has no seed; \`seed\` is not sent.`,
      });
    }
    return issues;
  }

  turn(request: TurnRequest, signal?: AbortSignal): Turn {
    const messages: MessageParam[] = [{ role: 'user', content: request.input }];
    const params = this.#params(request);
    return createTurn(
      {
        provider: this.name,
        model: request.model,
        price: this.priceOf(request.model),
        timeoutMs: request.timeoutMs ?? this.#client.timeoutMs,
        maxOutputChars: this.#client.maxOutputChars,
        preflightError: settingsPreflightError(
          'anthropic',
          this.name,
          request,
          this.checkModelSettings(request),
        ),
        exchange: async (results, ctx) => {
          if (results.length > 0) {
            const content = results.map((result) => ({
              type: 'tool_result' as const,
              tool_use_id: result.callId,
              content: result.result,
            }));
            messages.push({ role: 'user', content });
          }
          const httpRequest = jsonRequest(
            this.#url,
            this.#headers,
            extend(params, { messages }),
            request.model,
            asCount(params.max_tokens),
          );
          const read = (response: Response, reading: ResponseReading) =>
            this.#read(response, reading, ctx, httpRequest);
          const { response, content } = await postWithRetries(this.#client, httpRequest, ctx, read);
          messages.push({ role: 'assistant', content });
          return response;
        },
      },
      signal,
    );
  }

  #params(request: TurnRequest): Record<string, unknown> {
    // The API refuses thinking with a forced tool choice (the completion requirement's last try):
    // that request goes without thinking, so the forcing still holds.
    const forced = request.toolChoice === 'required' || typeof request.toolChoice === 'object';
    const budget =
      request.reasoningEffort === undefined || forced
        ? undefined
        : ANTHROPIC_THINKING_BUDGETS[request.reasoningEffort];
    const outputTokens = request.maxOutputTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS;
    // max_tokens must exceed the thinking budget, which counts towards it.
    const params: Record<string, unknown> = {
      model: request.model,
      max_tokens: outputTokens + (budget ?? 0),
    };
    if (request.system !== '') params.system = request.system;
    if (this.#stream) params.stream = true;
    if (budget !== undefined) params.thinking = { type: 'enabled', budget_tokens: budget };
    if (request.tools.length > 0) {
      params.tools = request.tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        input_schema: tool.parameters,
      }));
      if (request.toolChoice !== undefined) params.tool_choice = toolChoiceParam(request.toolChoice);
    }
    if (request.temperature !== undefined) params.temperature = request.temperature;
    if (request.topP !== undefined) params.top_p = request.topP;
    if (request.topK !== undefined) params.top_k = request.topK;
    if (request.stop !== undefined) params.stop_sequences = request.stop;
    return params;
  }

  async #read(
    response: Response,
    reading: ResponseReading,
    ctx: ExchangeContext,
    request: HttpRequest,
  ): Promise<{ response: ModelResponse; content: AnthropicContentBlock[]; usage: Usage | undefined }> {
    const origin: ErrorOrigin = {
      provider: this.name,
      url: this.#url,
      status: response.status,
      requestId: requestIdOf(response.headers),
    };
    const accumulator = new MessagesStreamAccumulator(origin);
    await refuseForeignAnswer(response, origin);
    let finished: ReturnType<MessagesStreamAccumulator['finish']>;
    /** A whole JSON body was read: its usage is the server's final count, whatever happens next. */
    let whole = false;
    try {
      if (isJsonResponse(response)) {
        const body = await readJsonBody(response, origin, reading);
        whole = true;
        for (const event of messageAsEvents(body)) accumulator.push(event, ctx);
      } else {
        if (response.body === null)
          throw providerError(
            'bad_response',
            `${this.name} sent an empty body${inParentheses(this.#url)}.`,
            origin,
          );
        for await (const event of readServerSentEvents(response.body, origin, reading)) {
          accumulator.push(parseEventData(event.data, origin), ctx);
          if (accumulator.stopped) break;
        }
      }
      finished = accumulator.finish();
    } catch (error) {
      // `message_start` reported the input before the stream broke: that count is kept. A whole
      // body cut at maxOutputChars carries its final usage (in its replayed message_start): the
      // server produced and bills all of it, so it is charged as reported. So is a stream cut
      // after `message_delta`'s final output count with no output since (no `message_stop`).
      const partial = brokenResponseUsage(
        accumulator.usage,
        request,
        streamedOutput(ctx, accumulator),
        whole || accumulator.outputCounted,
      );
      if (partial !== undefined) ctx.reportFailedAttemptUsage(partial);
      throw error;
    }
    const usage = responseUsage(accumulator.usage, request, streamedOutput(ctx, accumulator));
    if (usage !== undefined) ctx.reportUsage(usage);
    // Continuing a paused turn would mean sending it back unchanged; troupe sends no server tools,
    // so a pause is not an answer it asked for, and its text is not a finished one.
    if (accumulator.paused) {
      throw providerError(
        'bad_response',
        `${this.name} paused the turn (stop_reason pause_turn; ${endpointOf(this.#url)}), which the API does only for server tools troupe does not send; the paused response is not a finished answer.`,
        origin,
        { stopReason: 'pause_turn' },
      );
    }
    return extend(finished, { usage });
  }
}
