/** Reads a Server-Sent Events response body with eventsource-parser. */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { type ErrorOrigin, networkError, providerError } from './provider-error.ts';

/**
 * Yields the events of an SSE body as they arrive. A last event without its closing blank line
 * is still delivered at end of stream (some OpenAI-compatible servers end with `data: [DONE]\n`).
 * A connection failure while reading becomes a `server_error` ProviderError (`fields.network`);
 * an abort rethrows the signal's reason. Leaving the loop early cancels the body.
 */
export async function* readServerSentEvents(
  body: ReadableStream<Uint8Array>,
  provider: string,
  signal: AbortSignal,
): AsyncGenerator<EventSourceMessage, void, undefined> {
  let batch: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => batch.push(event) });
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
        throw networkError({ provider }, error);
      }
      if (chunk.done) break;
      parser.feed(decoder.decode(chunk.value, { stream: true }));
      if (batch.length > 0) {
        const ready = batch;
        batch = [];
        yield* ready;
      }
    }
    finished = true;
    parser.feed(`${decoder.decode()}\n\n`);
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
