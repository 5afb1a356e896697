/**
 * Reassembles a Chat Completions response from its stream chunks (or from a non-streaming body,
 * converted to one chunk): text, reasoning, tool calls whose arguments arrive in pieces, the
 * finish reason and usage. Only the first choice seen is followed (requests with n > 1).
 */
import { asArray, asCount, asNumber, asRecord, asString } from './json-shapes.ts';
import { type ErrorOrigin, errorFromStreamPayload, inParentheses, providerError } from './provider-error.ts';
import { mergeUsage, type ReportedUsage } from './receipt.ts';
import { toolCall } from './tool-arguments.ts';
import type { ModelResponse, StreamSink } from './turn-runner.ts';
import type { StopReason } from './types.ts';

/** An assistant message in Chat Completions format, as sent back in the continuation. */
export interface ChatAssistantMessage {
  readonly role: 'assistant';
  readonly content: string | null;
  readonly tool_calls?: readonly {
    readonly id: string;
    readonly type: 'function';
    readonly function: { readonly name: string; readonly arguments: string };
  }[];
}

interface PartialCall {
  id: string;
  name: string;
  args: string;
}

const STOP_REASONS: Readonly<Record<string, StopReason>> = {
  stop: 'end_turn',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  length: 'length',
  content_filter: 'content_filter',
};

/**
 * Reads Chat Completions usage (`prompt_tokens`, details with cached and reasoning tokens). A count
 * that is not one ({@link asCount}: negative, not a number, missing) is left undefined, so troupe
 * estimates that side rather than count it as 0 (see `completeUsage`). An unreadable detail is 0.
 */
export function readChatUsage(value: unknown): ReportedUsage | undefined {
  const usage = asRecord(value);
  if (usage === undefined) return undefined;
  const inputTokens = asCount(usage.prompt_tokens);
  const outputTokens = asCount(usage.completion_tokens);
  if (inputTokens === undefined && outputTokens === undefined) return undefined;
  return {
    inputTokens,
    outputTokens,
    cachedInputTokens: asCount(asRecord(usage.prompt_tokens_details)?.cached_tokens) ?? 0,
    reasoningTokens: asCount(asRecord(usage.completion_tokens_details)?.reasoning_tokens) ?? 0,
  };
}

/** Turns a non-streaming `chat.completion` body into the equivalent single stream chunk. */
export function completionAsChunk(body: unknown): unknown {
  const completion = asRecord(body);
  if (completion === undefined) return body;
  const choices = asArray(completion.choices).map((value) => {
    const choice = asRecord(value) ?? {};
    const message = asRecord(choice.message) ?? {};
    const toolCalls = asArray(message.tool_calls).map((call, index) => ({ ...asRecord(call), index }));
    return {
      index: choice.index,
      delta: { ...message, tool_calls: toolCalls },
      finish_reason: choice.finish_reason,
    };
  });
  return { ...completion, choices };
}

/** A delta that carries text, reasoning, a refusal or a tool call (not just a role or ''). */
function hasOutput(delta: Record<string, unknown> | undefined): boolean {
  if (delta === undefined) return false;
  const texts = [delta.content, delta.refusal, delta.reasoning_content, delta.reasoning];
  return texts.some((text) => Boolean(asString(text))) || asArray(delta.tool_calls).length > 0;
}

/** Accumulates one Chat Completions response. */
export class ChatStreamAccumulator {
  readonly #origin: ErrorOrigin;
  #choice: number | undefined;
  #text = '';
  /**
   * Calls by the server's `index`; a later call that reuses an index under a new id (Ollama gives
   * every parallel call index 0) gets its own entry after the earlier ones of that index.
   */
  readonly #calls = new Map<number, PartialCall[]>();
  #callCount = 0;
  #finishReason: string | undefined;
  #usage: ReportedUsage | undefined;
  /** The chunk being applied carries a readable output count (a running total that counts it). */
  #chunkCounted = false;
  /** No output arrived after the last readable output count: see {@link outputCounted}. */
  #outputCounted = false;
  #sawChoices = false;
  /** A `refusal` delta came: the model declined, whatever finish reason follows (often `stop`). */
  #refused = false;

  constructor(origin: ErrorOrigin) {
    this.#origin = origin;
  }

  /**
   * The usage chunks' counts, when the server sent any. Servers that send usage in several chunks
   * (vLLM's continuous usage stats) send running totals: a later readable count replaces an earlier
   * one, and an unreadable one keeps it.
   */
  get usage(): ReportedUsage | undefined {
    return this.#usage;
  }

  /** Tool calls of the followed choice so far. */
  get toolCalls(): number {
    return this.#callCount;
  }

  /**
   * The output count of {@link usage} counts every piece of output that arrived: no output came
   * in a chunk after the last one with a readable `completion_tokens`, nor in a chunk without
   * one since. A running total sent with every chunk counts that chunk's tokens, so a stream cut
   * after it (the chunk that passed maxOutputChars included) was counted by the server up to
   * where troupe stopped reading.
   */
  get outputCounted(): boolean {
    return this.#outputCounted && this.#usage?.outputTokens !== undefined;
  }

  /** Applies one parsed chunk, emitting text and reasoning deltas. Throws on an error chunk. */
  push(value: unknown, sink: StreamSink): void {
    const chunk = asRecord(value);
    if (chunk === undefined) throw this.#bad(`Expected a JSON object chunk, got ${JSON.stringify(value)}.`);
    if (chunk.error !== undefined && chunk.error !== null) throw errorFromStreamPayload(this.#origin, chunk);
    const usage = readChatUsage(chunk.usage);
    this.#usage = mergeUsage(this.#usage, usage);
    this.#chunkCounted = usage?.outputTokens !== undefined;
    if (this.#chunkCounted) this.#outputCounted = true;
    if (Array.isArray(chunk.choices)) this.#sawChoices ||= chunk.choices.length > 0;
    for (const item of asArray(chunk.choices)) {
      const choice = asRecord(item);
      if (choice === undefined) continue;
      const index = asNumber(choice.index) ?? 0;
      this.#choice ??= index;
      if (index !== this.#choice) continue;
      const delta = asRecord(choice.delta);
      // Late text would be appended to an answer the server said was complete. A chunk with no
      // output after the finish (OpenAI's usage chunk with `include_usage`, an empty delta) is fine.
      if (this.#finishReason !== undefined && hasOutput(delta)) {
        throw this.#bad(
          `Choice ${index} sent more output after its finish_reason ${JSON.stringify(this.#finishReason)}.`,
        );
      }
      this.#applyDelta(delta, sink);
      this.#finishReason = asString(choice.finish_reason) ?? this.#finishReason;
    }
  }

  #applyDelta(delta: Record<string, unknown> | undefined, sink: StreamSink): void {
    if (delta === undefined) return;
    // DeepSeek and vLLM send `reasoning_content`; Ollama and OpenRouter send `reasoning`.
    const reasoning = asString(delta.reasoning_content) ?? asString(delta.reasoning);
    if (reasoning) {
      this.#output();
      sink.emit({ type: 'reasoning_delta', text: reasoning });
    }
    const refusal = asString(delta.refusal);
    this.#refused ||= Boolean(refusal);
    for (const text of [asString(delta.content), refusal]) {
      if (!text) continue;
      this.#output();
      sink.emit({ type: 'text_delta', text });
      this.#text += text;
    }
    const known = this.#callCount;
    asArray(delta.tool_calls).forEach((item, position) => {
      const call = asRecord(item);
      if (call === undefined) return;
      // Compatible servers sometimes omit `index` when they send each call whole.
      const index = asNumber(call.index) ?? known + position;
      const fn = asRecord(call.function);
      const id = asString(call.id) ?? '';
      const atIndex = this.#calls.get(index) ?? [];
      let partial = atIndex.at(-1);
      // A new id at a used index starts another call: its arguments must not be appended to the
      // earlier call's (Ollama, some gateways and Gemini's compatible API send index 0 for all).
      if (partial === undefined || (id !== '' && partial.id !== '' && id !== partial.id)) {
        partial = { id: '', name: '', args: '' };
        atIndex.push(partial);
        this.#calls.set(index, atIndex);
        this.#callCount += 1;
      }
      partial.id ||= id;
      partial.name ||= asString(fn?.name) ?? '';
      const fragment = asString(fn?.arguments) ?? '';
      if (fragment !== '') this.#output();
      sink.countOutput(fragment.length, Buffer.byteLength(fragment, 'utf8'));
      partial.args += fragment;
    });
  }

  /** Output is about to arrive (before it is counted: counting may throw at maxOutputChars). */
  #output(): void {
    if (!this.#chunkCounted) this.#outputCounted = false;
  }

  /**
   * The finished response. `sawDone` tells whether the `[DONE]` sentinel (or a complete JSON body)
   * ended it; a stream that just stops without it or a finish reason was cut off.
   */
  finish(sawDone: boolean): { readonly response: ModelResponse; readonly message: ChatAssistantMessage } {
    if (!sawDone && this.#finishReason === undefined) {
      throw this.#bad('The stream ended before the model finished (no finish_reason and no [DONE]).');
    }
    // `{}` or `{"choices": []}` is the server's failure to answer, not the model's empty answer.
    if (!this.#sawChoices) throw this.#bad('The response has no choices: the server sent no answer.');
    const entries = [...this.#calls.entries()]
      .sort(([a], [b]) => a - b)
      .flatMap(([index, calls]) => calls.map((call) => ({ index, call })));
    // Only the first call of an index can lack an id: a later one was told apart by its id.
    const calls = entries.map(({ index, call }) => {
      if (call.name === '') throw this.#bad(`Tool call at index ${index} has no function name.`);
      return toolCall(call.id || `call_${index}`, call.name, call.args);
    });
    // A refusal ends like Anthropic's `stop_reason: refusal`: blocked, not a finished answer.
    const mapped: StopReason = this.#refused
      ? 'content_filter'
      : this.#finishReason === undefined
        ? 'end_turn'
        : (STOP_REASONS[this.#finishReason] ?? 'other');
    // Some compatible servers (Ollama among them) report `stop` for a response with tool calls.
    const stopReason =
      calls.length > 0 && (mapped === 'end_turn' || mapped === 'other') ? 'tool_calls' : mapped;
    const message: ChatAssistantMessage = {
      role: 'assistant',
      content: this.#text === '' ? null : this.#text,
      ...(calls.length > 0 && {
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: 'function' as const,
          function: { name: call.name, arguments: call.rawArguments || '{}' },
        })),
      }),
    };
    return { response: { text: this.#text, toolCalls: calls, stopReason }, message };
  }

  /** A `bad_response` naming the provider and where it answered: the CLI prints only the message. */
  #bad(message: string) {
    const { provider, url } = this.#origin;
    return providerError(
      'bad_response',
      `${provider} sent an unusable response${inParentheses(url)}: ${message}`,
      this.#origin,
    );
  }
}
