/** Reads a Server-Sent Events response body with eventsource-parser. */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ERROR_BODY_MAX_BYTES, MAX_EVENT_BYTES } from './constants.ts';
import type { ResponseReading } from './http.ts';
import { parseJson } from './json-shapes.ts';
import {
  bodyExcerpt,
  type ErrorOrigin,
  inParentheses,
  networkError,
  providerError,
} from './provider-error.ts';

/**
 * Yields the events of an SSE body as they arrive. A last event without its closing blank line
 * is still delivered at end of stream (some OpenAI-compatible servers end with `data: [DONE]\n`).
 * Every chunk is reported to `reading` (idle timer, byte limit); an event that grows past
 * {@link MAX_EVENT_BYTES} before it completes is `response_too_large` (see {@link EventSize}:
 * finished comment lines, keep-alives, do not count toward it). A connection failure while
 * reading becomes a `server_error` ProviderError (`fields.network`); an abort rethrows the signal's
 * reason. Leaving the loop early cancels the body. A body that ends holding text but no event or
 * comment at all (an HTML page sent without a content type) is a `bad_response` quoting its
 * start, instead of only "the stream ended early".
 */
export async function* readServerSentEvents(
  body: ReadableStream<Uint8Array>,
  origin: ErrorOrigin,
  reading: ResponseReading,
): AsyncGenerator<EventSourceMessage, void, undefined> {
  const { signal } = reading;
  let batch: EventSourceMessage[] = [];
  const size = new EventSize();
  // The body's start, kept (at most ERROR_BODY_MAX_BYTES characters) until anything of an event
  // stream arrives, to quote a body that is not one.
  let head = '';
  let streamed = false;
  const parser = createParser({
    onEvent: (event) => {
      batch.push(event);
      streamed = true;
    },
    onComment: () => {
      streamed = true;
    },
  });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        throw networkError(origin, error);
      }
      if (chunk.done) break;
      reading.received(chunk.value.byteLength);
      // Checked before the parser holds the chunk.
      if (size.add(chunk.value) > MAX_EVENT_BYTES) {
        throw providerError(
          'response_too_large',
          `${origin.provider} sent a stream event larger than ${MAX_EVENT_BYTES} bytes${inParentheses(origin.url)}; it was cut off.`,
          origin,
          { maxEventBytes: MAX_EVENT_BYTES },
        );
      }
      const text = decoder.decode(chunk.value, { stream: true });
      if (!streamed && head.length < ERROR_BODY_MAX_BYTES)
        head += text.slice(0, ERROR_BODY_MAX_BYTES - head.length);
      parser.feed(text);
      if (batch.length > 0) {
        const ready = batch;
        batch = [];
        yield* ready;
      }
    }
    finished = true;
    parser.feed(`${decoder.decode()}\n\n`);
    if (!streamed && head.trim() !== '') {
      const status = origin.status === undefined ? '' : ` HTTP ${origin.status}`;
      throw providerError(
        'bad_response',
        `${origin.provider} answered${status}${inParentheses(origin.url)} with a body that holds no server-sent event (is the base URL the API's?): ${bodyExcerpt(head)}`,
        origin,
      );
    }
    yield* batch;
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;

/**
 * Measures what the SSE parser holds of the body, for {@link MAX_EVENT_BYTES}: the lines of the
 * event being received (everything since the last blank line, line ends included), and the
 * comment line still arriving. A finished comment line is dropped by the parser, so it counts no
 * more: four million `:\n` keep-alives between two events hold nothing (they are bounded by
 * `maxResponseBytes` and the idle timeout instead). One comment line that does not end is held
 * whole in the parser's line buffer, so it counts until its line end. Line ends are LF, CR or
 * CRLF, a CRLF possibly split between two chunks.
 */
class EventSize {
  /** Bytes of the event's lines so far. */
  #event = 0;
  /** Bytes of the comment line in progress. */
  #comment = 0;
  #lineStart = true;
  #inComment = false;
  /** The last byte was a CR: an LF now ends no other line. */
  #afterCr = false;

  /** Takes a chunk; returns the most bytes held at any point of it. */
  add(bytes: Uint8Array): number {
    // Locals, not fields, in the loop: it runs for every byte of every response.
    let event = this.#event;
    let comment = this.#comment;
    let lineStart = this.#lineStart;
    let inComment = this.#inComment;
    let afterCr = this.#afterCr;
    let most = 0;
    for (let index = 0; index < bytes.length; index += 1) {
      const byte = bytes[index] as number;
      if (byte === LF || byte === CR) {
        const crlf = byte === LF && afterCr;
        afterCr = byte === CR;
        if (crlf) continue;
        most = Math.max(most, event + comment);
        // A blank line dispatches the event; a finished comment line is dropped.
        if (lineStart) event = 0;
        else if (inComment) comment = 0;
        else event += 1;
        lineStart = true;
        inComment = false;
        continue;
      }
      afterCr = false;
      if (lineStart) {
        lineStart = false;
        inComment = byte === COLON;
      }
      if (inComment) comment += 1;
      else event += 1;
    }
    this.#event = event;
    this.#comment = comment;
    this.#lineStart = lineStart;
    this.#inComment = inComment;
    this.#afterCr = afterCr;
    return Math.max(most, event + comment);
  }
}

/**
 * Parses an event's JSON data ({@link parseJson}: Python's `NaN` and `Infinity` are read as null);
 * anything else is a `bad_response` quoting the start of the data.
 */
export function parseEventData(data: string, origin: ErrorOrigin): unknown {
  try {
    return parseJson(data);
  } catch (error) {
    const excerpt = data.length > 200 ? `${data.slice(0, 200)}...` : data;
    const message = `${origin.provider} sent a stream event whose data is not JSON${inParentheses(origin.url)}: ${excerpt}`;
    throw providerError('bad_response', message, origin, {}, error);
  }
}
