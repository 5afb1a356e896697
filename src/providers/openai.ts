/**
 * OpenAI Chat Completions provider: api.openai.com and any OpenAI-compatible server (Ollama, vLLM,
 * llama.cpp server, LM Studio, OpenRouter, Azure). Streams over SSE; falls back to a plain JSON
 * body when asked to, or when the server answers JSON to a streaming request.
 */
import { UserError } from '../errors.ts';
import { extend } from '../objects.ts';
import { DEFAULT_OPENAI_BASE_URL, OPENAI_MAX_STOP_SEQUENCES } from './constants.ts';
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
import { type ChatAssistantMessage, ChatStreamAccumulator, completionAsChunk } from './openai-chat-stream.ts';
import {
  checkBaseURL,
  checkHttpOptions,
  checkOneOf,
  checkType,
  envValue,
  isOfficialBaseURL,
  joinUrl,
  prepareHttpClient,
  resolveBaseURL,
} from './options.ts';
import { DEFAULT_PRICES, type ModelPrice, type PriceTable, priceFor } from './pricing.ts';
import { type ErrorOrigin, inParentheses, providerError, requestIdOf } from './provider-error.ts';
import { brokenResponseUsage, responseUsage, streamedOutput } from './receipt.ts';
import { reasoningEffortIssue, settingsPreflightError } from './settings-support.ts';
import { parseEventData, readServerSentEvents } from './sse.ts';
import { createTurn, type ExchangeContext, type ModelResponse } from './turn-runner.ts';
import type { Provider, ToolChoice, Turn, TurnRequest, Usage } from './types.ts';

/** Options of {@link OpenAIProvider}. */
export interface OpenAIProviderOptions extends HttpProviderOptions {
  /** @default `OPENAI_BASE_URL`, else `https://api.openai.com/v1` */
  readonly baseURL?: string;
  /** Sent as a Bearer token; may be omitted for local servers. @default `OPENAI_API_KEY` */
  readonly apiKey?: string;
  /** Name in receipts, errors and rate-limit keys. @default 'openai' */
  readonly name?: string;
  /** Request an SSE stream; `false` asks for one JSON body (servers without SSE). @default true */
  readonly stream?: boolean;
  /** How the output limit is sent; older compatible servers know only `max_tokens`. @default 'max_completion_tokens' */
  readonly maxTokensParam?: 'max_completion_tokens' | 'max_tokens';
  /** Prices for receipts. @default DEFAULT_PRICES */
  readonly prices?: PriceTable;
  /** Where `OPENAI_BASE_URL` and `OPENAI_API_KEY` are read. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

type ChatMessage =
  | { readonly role: 'system' | 'user'; readonly content: string }
  | ChatAssistantMessage
  | { readonly role: 'tool'; readonly tool_call_id: string; readonly content: string };

function toolChoiceParam(choice: ToolChoice): unknown {
  return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.tool } };
}

/**
 * Checks the options of an openai provider without building one: UserError `invalid_option`
 * (fields `provider`, `option`) for a value of the wrong type, or a `baseURL` that is not an
 * absolute http(s) URL. A missing API key, and the base URL variable, are not checked:
 * the environment of the thread that builds the provider decides.
 */
export function checkOpenAIOptions(options: OpenAIProviderOptions = {}): void {
  const name = options.name ?? 'openai';
  for (const key of ['baseURL', 'apiKey', 'name'] as const) checkType(name, options, key, 'string');
  checkBaseURL(name, options);
  checkType(name, options, 'stream', 'boolean');
  checkOneOf(name, options, 'maxTokensParam', ['max_completion_tokens', 'max_tokens']);
  checkHttpOptions(name, options);
}

/** A provider speaking the OpenAI Chat Completions API. */
export class OpenAIProvider implements Provider {
  readonly name: string;
  readonly #url: string;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #client: HttpClient;
  readonly #stream: boolean;
  readonly #maxTokensParam: string;
  readonly #prices: PriceTable;

  constructor(options: OpenAIProviderOptions = {}) {
    checkOpenAIOptions(options);
    const name = options.name ?? 'openai';
    const env = options.env ?? process.env;
    const baseURL = resolveBaseURL(name, options.baseURL, env, 'OPENAI_BASE_URL', DEFAULT_OPENAI_BASE_URL);
    const apiKey = options.apiKey ?? envValue(env, 'OPENAI_API_KEY');
    if (apiKey === undefined && isOfficialBaseURL(baseURL, DEFAULT_OPENAI_BASE_URL)) {
      throw new UserError(
        'missing_api_key',
        'The openai provider needs an API key: set OPENAI_API_KEY or pass `apiKey` (or point `baseURL` / OPENAI_BASE_URL at a compatible server).',
        { provider: name, option: 'apiKey' },
      );
    }
    this.name = name;
    // Masked wherever they appear from now on: a 401 body that echoes the key goes to the journal.
    registerCredentials(apiKey, options.headers);
    this.#client = prepareHttpClient(name, options);
    this.#url = joinUrl(baseURL, 'chat/completions');
    this.#headers = {
      'content-type': 'application/json',
      accept: 'text/event-stream, application/json',
      ...(apiKey !== undefined && { authorization: `Bearer ${apiKey}` }),
      ...options.headers,
    };
    this.#stream = options.stream ?? true;
    this.#maxTokensParam = options.maxTokensParam ?? 'max_completion_tokens';
    this.#prices = options.prices ?? DEFAULT_PRICES;
  }

  priceOf(model: string): ModelPrice | undefined {
    return priceFor(model, this.#prices);
  }

  /**
   * Chat Completions has no `top_k`, and takes at most four stop sequences; every other setting
   * is sent as is (a model that rejects one, e.g. `temperature` on some reasoning models, answers
   * `bad_request`).
   */
  checkModelSettings(settings: ModelSettings): readonly ModelSettingIssue[] {
    const issues: ModelSettingIssue[] = [];
    const effort = reasoningEffortIssue('openai', this.name, settings.reasoningEffort);
    if (effort) issues.push(effort);
    if (settings.topK !== undefined) {
      issues.push({
        setting: 'topK',
        kind: 'unsupported',
        message: `${this.name} (OpenAI Chat Completions) has no \`top_k\`; leave \`topK\` out or use \`topP\`.`,
      });
    }
    if (settings.stop !== undefined && settings.stop.length > OPENAI_MAX_STOP_SEQUENCES) {
      issues.push({
        setting: 'stop',
        kind: 'unsupported',
        message: `Expected at most ${OPENAI_MAX_STOP_SEQUENCES} stop sequences for ${this.name}, got ${settings.stop.length}.`,
      });
    }
    return issues;
  }

  turn(request: TurnRequest, signal?: AbortSignal): Turn {
    const messages: ChatMessage[] = [];
    if (request.system !== '') messages.push({ role: 'system', content: request.system });
    messages.push({ role: 'user', content: request.input });
    const params = this.#params(request);
    return createTurn(
      {
        provider: this.name,
        model: request.model,
        price: this.priceOf(request.model),
        timeoutMs: request.timeoutMs ?? this.#client.timeoutMs,
        maxOutputChars: this.#client.maxOutputChars,
        preflightError: settingsPreflightError(
          'openai',
          this.name,
          request,
          this.checkModelSettings(request),
        ),
        exchange: async (results, ctx) => {
          for (const result of results) {
            messages.push({ role: 'tool', tool_call_id: result.callId, content: result.result });
          }
          const httpRequest = jsonRequest(
            this.#url,
            this.#headers,
            extend(params, { messages }),
            request.model,
            asCount(params[this.#maxTokensParam]),
          );
          const read = (response: Response, reading: ResponseReading) =>
            this.#read(response, reading, ctx, httpRequest);
          const { response, message } = await postWithRetries(this.#client, httpRequest, ctx, read);
          messages.push(message);
          return response;
        },
      },
      signal,
    );
  }

  #params(request: TurnRequest): Record<string, unknown> {
    const params: Record<string, unknown> = { model: request.model };
    if (this.#stream) {
      params.stream = true;
      params.stream_options = { include_usage: true };
    }
    if (request.tools.length > 0) {
      params.tools = request.tools.map((tool) => ({
        type: 'function',
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      }));
      if (request.toolChoice !== undefined) params.tool_choice = toolChoiceParam(request.toolChoice);
    }
    if (request.maxOutputTokens !== undefined) params[this.#maxTokensParam] = request.maxOutputTokens;
    if (request.temperature !== undefined) params.temperature = request.temperature;
    if (request.topP !== undefined) params.top_p = request.topP;
    if (request.reasoningEffort !== undefined) params.reasoning_effort = request.reasoningEffort;
    if (request.stop !== undefined) params.stop = request.stop;
    if (request.seed !== undefined) params.seed = request.seed;
    if (request.presencePenalty !== undefined) params.presence_penalty = request.presencePenalty;
    if (request.frequencyPenalty !== undefined) params.frequency_penalty = request.frequencyPenalty;
    return params;
  }

  async #read(
    response: Response,
    reading: ResponseReading,
    ctx: ExchangeContext,
    request: HttpRequest,
  ): Promise<{ response: ModelResponse; message: ChatAssistantMessage; usage: Usage | undefined }> {
    const origin: ErrorOrigin = {
      provider: this.name,
      url: this.#url,
      status: response.status,
      requestId: requestIdOf(response.headers),
    };
    const accumulator = new ChatStreamAccumulator(origin);
    let complete = false;
    /** A whole JSON body was read: its usage is the server's final count, whatever happens next. */
    let whole = false;
    await refuseForeignAnswer(response, origin);
    let finished: ReturnType<ChatStreamAccumulator['finish']>;
    try {
      if (isJsonResponse(response)) {
        const body = await readJsonBody(response, origin, reading);
        whole = true;
        accumulator.push(completionAsChunk(body), ctx);
        complete = true;
      } else {
        if (response.body === null)
          throw providerError(
            'bad_response',
            `${this.name} sent an empty body${inParentheses(this.#url)}.`,
            origin,
          );
        for await (const event of readServerSentEvents(response.body, origin, reading)) {
          if (event.data.trim() === '[DONE]') {
            complete = true;
            break;
          }
          accumulator.push(parseEventData(event.data, origin), ctx);
        }
      }
      finished = accumulator.finish(complete);
    } catch (error) {
      // Usage the server sent before the stream broke (its last chunk, then no `[DONE]`) is kept.
      // A whole body cut at maxOutputChars, or a stream whose running total counts all that came,
      // is charged as reported; the receipt's errorCode says it was cut.
      const counted = whole || accumulator.outputCounted;
      const partial = brokenResponseUsage(
        accumulator.usage,
        request,
        streamedOutput(ctx, accumulator),
        counted,
      );
      if (partial !== undefined) ctx.reportFailedAttemptUsage(partial);
      throw error;
    }
    const usage = responseUsage(accumulator.usage, request, streamedOutput(ctx, accumulator));
    if (usage !== undefined) ctx.reportUsage(usage);
    return extend(finished, { usage });
  }
}
