/**
 * `fetch` for the HTTP transports with the bound on one message: the SDK reads HTTP bodies
 * without one, and an event that never ended grew a thread to its heap limit in seconds.
 */

/** A JSON body longer than the bound: the call it answers fails, the session goes on. */
export class BodyTooLong extends Error {
  constructor(readonly limit: number) {
    super(`the server sent a message longer than ${limit} bytes, the most troupe reads`);
  }
}

/**
 * `fetch` whose response bodies fail once one message is longer than `maxBytes`: a JSON body as a
 * whole (with {@link BodyTooLong}), a stream of server-sent events per event (the bytes since the
 * last blank line), so a notification stream may run for hours; `onOversized` is told first.
 */
export function boundedFetch(
  maxBytes: number,
  onOversized: () => void,
): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (!response.body || [101, 204, 205, 304].includes(response.status)) return response;
    const events = /^text\/event-stream/i.test(response.headers.get('content-type') ?? '');
    let size = 0;
    let lineBytes = 0;
    let afterCr = false;
    const bound = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (events) {
          for (const byte of chunk) {
            size += 1;
            if (byte === 0x0a && afterCr) {
              afterCr = false;
              continue;
            }
            afterCr = byte === 0x0d;
            if (byte !== 0x0a && byte !== 0x0d) lineBytes += 1;
            else if (lineBytes === 0) size = 0;
            else lineBytes = 0;
            if (size > maxBytes) break;
          }
        } else {
          size += chunk.byteLength;
        }
        if (size > maxBytes) {
          // A JSON body is one answer: its call fails, and the session goes on. An event stream
          // past the bound has lost its framing: the session ends.
          if (!events) {
            controller.error(new BodyTooLong(maxBytes));
            return;
          }
          onOversized();
          controller.error(
            new Error(`the server sent a message longer than ${maxBytes} bytes, the most troupe reads`),
          );
          return;
        }
        controller.enqueue(chunk);
      },
    });
    return new Response(response.body.pipeThrough(bound), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
