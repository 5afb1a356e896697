/**
 * Reassembles an Anthropic Messages response from its stream events (or from a non-streaming
 * body, replayed as events): text, thinking with its signature, tool_use input arriving as JSON
 * fragments, stop reason and usage. The content blocks are kept for the continuation request,
 * thinking blocks included, as the API requires when tools are used with extended thinking.
 */
import { asArray, asCount, asNumber, asRecord, asString } from './json-shapes.ts';
import { type ErrorOrigin, errorFromStreamPayload, inParentheses, providerError } from './provider-error.ts';
import type { ReportedUsage } from './receipt.ts';
import { toolCall } from './tool-arguments.ts';
import type { ModelResponse, StreamSink } from './turn-runner.ts';
import type { StopReason, ToolCall } from './types.ts';

/** A content block as sent back to the API in the assistant message of a continuation. */
export type AnthropicContentBlock =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'thinking'; readonly thinking: string; readonly signature: string }
  | { readonly type: 'redacted_thinking'; readonly data: string }
  | {
      readonly type: 'tool_use';
      readonly id: string;
      readonly name: string;
      readonly input: Record<string, unknown>;
    };

type Block =
  | { kind: 'text'; text: string }
  | { kind: 'thinking'; thinking: string; signature: string }
  | { kind: 'redacted_thinking'; data: string }
  /** `call` is set once the block is closed: an unclosed one was cut off (max_tokens). */
  | { kind: 'tool_use'; id: string; name: string; json: string; call?: ToolCall }
  | { kind: 'other' };

const STOP_REASONS: Readonly<Record<string, StopReason>> = {
  end_turn: 'end_turn',
  stop_sequence: 'end_turn',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  refusal: 'content_filter',
};

interface UsageCounts {
  /** Undefined until a readable `input_tokens` arrived. */
  input: number | undefined;
  output: number | undefined;
  cacheRead: number;
  cacheWrite: number;
}

/** Accumulates one Messages response. */
export class MessagesStreamAccumulator {
  readonly #origin: ErrorOrigin;
  readonly #blocks = new Map<number, Block>();
  /** Indexes of the blocks a `content_block_stop` closed. */
  readonly #closed = new Set<number>();
  #stopReason: string | undefined;
  #stopped = false;
  #usage: UsageCounts | undefined;
  /** A `message_delta` gave a readable output count and no output arrived since: {@link outputCounted}. */
  #outputCounted = false;

  constructor(origin: ErrorOrigin) {
    this.#origin = origin;
  }

  /** Tool calls (`tool_use` blocks) started so far. */
  get toolCalls(): number {
    let calls = 0;
    for (const block of this.#blocks.values()) if (block.kind === 'tool_use') calls += 1;
    return calls;
  }

  /** True once `message_stop` arrived: nothing after it belongs to this message. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /**
   * The output count of {@link usage} is the server's final one for all the output that arrived:
   * it came in a `message_delta` (which follows the message's content; `message_start`'s count is
   * not final), and no content arrived after it. A stream cut after it, before `message_stop`,
   * was counted by the server in full.
   */
  get outputCounted(): boolean {
    return this.#outputCounted && this.#usage?.output !== undefined;
  }

  /**
   * True when the API paused the turn (`stop_reason: pause_turn`). It does so for long turns of its
   * server tools (web search...) and expects the message sent back to continue; troupe sends none.
   */
  get paused(): boolean {
    return this.#stopReason === 'pause_turn';
  }

  /**
   * Usage in troupe's terms: input counts cache reads and writes; cached = cache reads. A side
   * whose `input_tokens` or `output_tokens` was never readable, or an input whose sum is no count,
   * is undefined, so troupe estimates it rather than count it as 0 (see `completeUsage`);
   * undefined when neither side is readable.
   */
  get usage(): ReportedUsage | undefined {
    const counts = this.#usage;
    if (counts === undefined) return undefined;
    // Three counts each below 2^53 can add up past it, where integers are no longer exact.
    const input =
      counts.input === undefined ? undefined : asCount(counts.input + counts.cacheRead + counts.cacheWrite);
    if (input === undefined && counts.output === undefined) return undefined;
    return {
      inputTokens: input,
      outputTokens: counts.output,
      cachedInputTokens: counts.cacheRead,
      reasoningTokens: 0,
    };
  }

  /**
   * Applies one stream event. The payload's own `type` is used, not the SSE `event:` name, which
   * some proxies drop. Throws on an `error` event.
   */
  push(value: unknown, sink: StreamSink): void {
    const event = asRecord(value);
    if (event === undefined) throw this.#bad(`Expected a JSON object event, got ${JSON.stringify(value)}.`);
    switch (event.type) {
      case 'message_start':
        this.#mergeUsage(asRecord(event.message)?.usage);
        return;
      case 'content_block_start': {
        const index = asNumber(event.index) ?? 0;
        // A second start at a used index would replace the first block: a tool call the model
        // made would vanish from the response and from the continuation, and the turn end as if
        // it had never been asked for.
        if (this.#blocks.has(index)) {
          throw this.#bad(`A content_block_start arrived for block ${index}, which was already started.`);
        }
        const block = startBlock(asRecord(event.content_block));
        this.#blocks.set(index, block);
        this.#startContent(block, sink);
        return;
      }
      case 'content_block_delta':
        this.#applyDelta(asNumber(event.index) ?? 0, asRecord(event.delta), sink);
        return;
      case 'content_block_stop': {
        const index = asNumber(event.index) ?? 0;
        const block = this.#blocks.get(index);
        // A stop for a block never started, or a second one, means the events are out of order:
        // what the answer holds can no longer be trusted (a proxy that replays or drops events).
        if (block === undefined) {
          throw this.#bad(`A content_block_stop arrived for block ${index}, which was never started.`);
        }
        if (this.#closed.has(index)) {
          throw this.#bad(`A content_block_stop arrived for block ${index}, which was already stopped.`);
        }
        this.#closed.add(index);
        if (block.kind === 'tool_use') block.call = toolCall(block.id, block.name, block.json);
        return;
      }
      case 'message_delta':
        this.#stopReason = asString(asRecord(event.delta)?.stop_reason) ?? this.#stopReason;
        this.#mergeUsage(event.usage);
        if (asCount(asRecord(event.usage)?.output_tokens) !== undefined) this.#outputCounted = true;
        return;
      case 'message_stop':
        this.#stopped = true;
        return;
      case 'error':
        throw errorFromStreamPayload(this.#origin, event);
      default:
        // ping and event types added after this was written
        return;
    }
  }

  /**
   * Content a block's start event already holds (the API starts blocks empty; a replayed body's
   * `tool_use` input, or a proxy's whole text, comes this way) is output like its deltas: text and
   * thinking are emitted, the rest counted, so `maxOutputChars` bounds it too. Before, four start
   * events of 7 MB text each made one 28 MB answer past the 2,000,000-character bound.
   */
  #startContent(block: Block, sink: StreamSink): void {
    const count = (kept: string): void => {
      if (kept === '') return;
      this.#outputCounted = false;
      sink.countOutput(kept.length, Buffer.byteLength(kept, 'utf8'));
    };
    switch (block.kind) {
      case 'text':
        if (block.text === '') return;
        this.#outputCounted = false;
        sink.emit({ type: 'text_delta', text: block.text });
        return;
      case 'thinking':
        count(block.signature);
        if (block.thinking === '') return;
        this.#outputCounted = false;
        sink.emit({ type: 'reasoning_delta', text: block.thinking });
        return;
      case 'redacted_thinking':
        count(block.data);
        return;
      case 'tool_use':
        // The id and name are bounded apart, as every provider's (MAX_TOOL_CALL_NAME_CHARS).
        count(block.json);
        return;
      default:
        return;
    }
  }

  #applyDelta(index: number, delta: Record<string, unknown> | undefined, sink: StreamSink): void {
    const block = this.#blocks.get(index);
    if (block === undefined || delta === undefined) {
      throw this.#bad(`A content_block_delta arrived for block ${index}, which was never started.`);
    }
    // Late text would be appended to an answer the server said was complete, and a late tool_use
    // fragment silently dropped (the call was already parsed at the stop).
    if (this.#closed.has(index)) {
      throw this.#bad(`A content_block_delta arrived for block ${index} after its content_block_stop.`);
    }
    switch (delta.type) {
      case 'text_delta': {
        const text = asString(delta.text) ?? '';
        if (block.kind !== 'text' || text === '') return;
        this.#outputCounted = false;
        sink.emit({ type: 'text_delta', text });
        block.text += text;
        return;
      }
      case 'input_json_delta': {
        const fragment = asString(delta.partial_json) ?? '';
        this.#outputCounted &&= fragment === '';
        sink.countOutput(fragment.length, Buffer.byteLength(fragment, 'utf8'));
        if (block.kind === 'tool_use') block.json += fragment;
        return;
      }
      case 'thinking_delta': {
        const text = asString(delta.thinking) ?? '';
        if (block.kind !== 'thinking' || text === '') return;
        this.#outputCounted = false;
        sink.emit({ type: 'reasoning_delta', text });
        block.thinking += text;
        return;
      }
      case 'signature_delta': {
        const fragment = asString(delta.signature) ?? '';
        this.#outputCounted &&= fragment === '';
        sink.countOutput(fragment.length, Buffer.byteLength(fragment, 'utf8'));
        if (block.kind === 'thinking') block.signature += fragment;
        return;
      }
      default:
        return;
    }
  }

  #mergeUsage(value: unknown): void {
    const usage = asRecord(value);
    if (usage === undefined) return;
    // Counts that are not non-negative numbers are left out (see asCount); an object with none is
    // no usage.
    const input = asCount(usage.input_tokens);
    const output = asCount(usage.output_tokens);
    const cacheRead = asCount(usage.cache_read_input_tokens);
    const cacheWrite = asCount(usage.cache_creation_input_tokens);
    if ([input, output, cacheRead, cacheWrite].every((count) => count === undefined)) return;
    const previous = this.#usage ?? { input: undefined, output: undefined, cacheRead: 0, cacheWrite: 0 };
    // message_delta repeats counts cumulatively, so later values replace earlier ones.
    this.#usage = {
      input: input ?? previous.input,
      output: output ?? previous.output,
      cacheRead: cacheRead ?? previous.cacheRead,
      cacheWrite: cacheWrite ?? previous.cacheWrite,
    };
  }

  /** The finished response and the content blocks to send back. Throws if `message_stop` never came. */
  finish(): { readonly response: ModelResponse; readonly content: AnthropicContentBlock[] } {
    if (!this.#stopped) throw this.#bad('The stream ended before message_stop.');
    const blocks = [...this.#blocks.entries()].sort(([a], [b]) => a - b).map(([, block]) => block);
    let text = '';
    const toolCalls: ToolCall[] = [];
    const content: AnthropicContentBlock[] = [];
    for (const block of blocks) {
      if (block.kind === 'text') {
        text += block.text;
        // The API rejects empty text blocks in requests.
        if (block.text !== '') content.push({ type: 'text', text: block.text });
      } else if (block.kind === 'thinking') {
        content.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
      } else if (block.kind === 'redacted_thinking') {
        content.push({ type: 'redacted_thinking', data: block.data });
      } else if (block.kind === 'tool_use' && block.call !== undefined) {
        toolCalls.push(block.call);
        content.push({ type: 'tool_use', id: block.id, name: block.name, input: block.call.arguments ?? {} });
      }
    }
    const mapped: StopReason =
      this.#stopReason === undefined ? 'end_turn' : (STOP_REASONS[this.#stopReason] ?? 'other');
    const stopReason = toolCalls.length > 0 && mapped === 'end_turn' ? 'tool_calls' : mapped;
    return { response: { text, toolCalls, stopReason }, content };
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

function startBlock(block: Record<string, unknown> | undefined): Block {
  switch (block?.type) {
    case 'text':
      return { kind: 'text', text: asString(block.text) ?? '' };
    case 'thinking':
      return {
        kind: 'thinking',
        thinking: asString(block.thinking) ?? '',
        signature: asString(block.signature) ?? '',
      };
    case 'redacted_thinking':
      return { kind: 'redacted_thinking', data: asString(block.data) ?? '' };
    case 'tool_use': {
      // Non-streamed input (a replayed JSON body) arrives whole in the start block.
      const input = asRecord(block.input);
      const json = input !== undefined && Object.keys(input).length > 0 ? JSON.stringify(input) : '';
      return { kind: 'tool_use', id: asString(block.id) ?? '', name: asString(block.name) ?? '', json };
    }
    default:
      return { kind: 'other' };
  }
}

/** Replays a non-streaming Messages body as the stream events that would have produced it. */
export function messageAsEvents(body: unknown): unknown[] {
  const message = asRecord(body);
  if (message === undefined) return [body];
  // An error body is replayed as the error event; a body with no content array is no message at
  // all (it then fails as a stream that never reached message_stop: `bad_response`).
  if (message.type === 'error' || !Array.isArray(message.content)) return [message];
  const events: unknown[] = [{ type: 'message_start', message: { usage: message.usage } }];
  asArray(message.content).forEach((value, index) => {
    const block = asRecord(value);
    if (block?.type === 'text') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } });
    } else if (block?.type === 'thinking') {
      const start = { type: 'thinking', thinking: '', signature: block.signature };
      events.push({ type: 'content_block_start', index, content_block: start });
      events.push({
        type: 'content_block_delta',
        index,
        delta: { type: 'thinking_delta', thinking: block.thinking },
      });
    } else {
      events.push({ type: 'content_block_start', index, content_block: value });
    }
    events.push({ type: 'content_block_stop', index });
  });
  events.push({ type: 'message_delta', delta: { stop_reason: message.stop_reason } });
  events.push({ type: 'message_stop' });
  return events;
}
