/**
 * The Responses API is not implemented (troupe speaks Chat Completions), but its recordings still
 * go through the SSE reader: every event arrives intact, whatever the chunk boundaries.
 */
import { readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { readServerSentEvents } from '../../src/providers/sse.ts';
import { CORPUS_DIR, corpusFile, replay, startServer, type TestServer } from './helpers.ts';

const recordings = readdirSync(CORPUS_DIR).filter((name) => name.startsWith('openai-responses-'));

async function readEvents(
  server: TestServer,
): Promise<{ event: string | undefined; data: Record<string, unknown> }[]> {
  const response = await fetch(server.url, { method: 'POST' });
  if (response.body === null) throw new Error('no body');
  const events = [];
  const reading = { signal: new AbortController().signal, received: () => {} };
  for await (const message of readServerSentEvents(response.body, { provider: 'openai' }, reading)) {
    events.push({ event: message.event, data: JSON.parse(message.data) as Record<string, unknown> });
  }
  return events;
}

describe('Responses API recordings through the SSE reader', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('finds both Responses recordings', () => {
    expect(recordings).toEqual([
      'openai-responses-stream-error-event.sse',
      'openai-responses-stream-reasoning-function-call.sse',
    ]);
  });

  it('reassembles the function call arguments split over 13 delta events', async () => {
    server = await startServer((_req, res) =>
      replay(res, corpusFile('openai-responses-stream-reasoning-function-call.sse'), 'text/event-stream', 7),
    );
    const events = await readEvents(server);
    expect(events).toHaveLength(56);
    for (const { event, data } of events) expect(event).toBe(data.type);
    expect(events.map(({ data }) => data.sequence_number)).toEqual(events.map((_, index) => index));
    const deltas = events.filter(({ event }) => event === 'response.function_call_arguments.delta');
    expect(deltas).toHaveLength(13);
    const done = events.find(({ event }) => event === 'response.function_call_arguments.done');
    expect(deltas.map(({ data }) => data.delta).join('')).toBe(done?.data.arguments);
    expect(done?.data.arguments).toBe('{"a":12,"b":7,"op":"add"}');
  });

  it('delivers the mid-stream error event and the failed response after it', async () => {
    server = await startServer((_req, res) =>
      replay(res, corpusFile('openai-responses-stream-error-event.sse'), 'text/event-stream', 7),
    );
    const events = await readEvents(server);
    expect(events.map(({ event }) => event)).toEqual([
      'response.created',
      'response.in_progress',
      'error',
      'response.failed',
    ]);
    expect(events[2]?.data.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
  });
});
