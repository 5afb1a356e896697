/** Reads a Server-Sent Events response body with eventsource-parser. */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ERROR_BODY_MAX_BYTES, MAX_EVENT_BYTES } from './constants.ts';
import type { ResponseReading } from './http.ts';
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
 * {@link MAX_EVENT_BYTES} before it completes is `response_too_large`; comment lines (keep-alives)
 * are not held, so they do not count toward it. A connection failure while
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
  let pendingBytes = 0;
  // The body's start, kept (at most ERROR_BODY_MAX_BYTES characters) until anything of an event
  // stream arrives, to quote a body that is not one.
  let head = '';
  let streamed = false;
  const parser = createParser({
    onEvent: (event) => {
      batch.push(event);
      pendingBytes = 0;
      streamed = true;
    },
    // Keep-alive comments are dropped by the parser, so a stream of them between two events holds
    // nothing. Only the comment's text is taken off (its colon and line end still count), and a
    // comment between two data lines of one event leaves those lines counted.
    onComment: (comment) => {
      pendingBytes = Math.max(0, pendingBytes - comment.length);
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
      pendingBytes += chunk.value.byteLength;
      const text = decoder.decode(chunk.value, { stream: true });
      if (!streamed && head.length < ERROR_BODY_MAX_BYTES)
        head += text.slice(0, ERROR_BODY_MAX_BYTES - head.length);
      parser.feed(text);
      if (pendingBytes > MAX_EVENT_BYTES) {
        throw providerError(
          'response_too_large',
          `${origin.provider} sent a stream event larger than ${MAX_EVENT_BYTES} bytes; it was cut off.`,
          origin,
          { maxEventBytes: MAX_EVENT_BYTES },
        );
      }
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

/** Parses an event's JSON data; anything else is a `bad_response` quoting the start of the data. */
export function parseEventData(data: string, origin: ErrorOrigin): unknown {
  try {
    return JSON.parse(data);
  } catch (error) {
    const excerpt = data.length > 200 ? `${data.slice(0, 200)}...` : data;
    const message = `${origin.provider} sent a stream event whose data is not JSON: ${excerpt}`;
    throw providerError('bad_response', message, origin, {}, error);
  }
}
