/** Test helpers: a local HTTP server on 127.0.0.1:0, chunked replay, and turn collection. */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Turn, TurnEvent, TurnRequest } from '../../src/providers/types.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The recorded provider streams (test/fixtures/corpus/provider-streams, see its SOURCES.md). */
export const CORPUS_DIR = path.resolve(repoRoot, 'test/fixtures/corpus/provider-streams');

/** Bytes of a corpus recording. */
export function corpusFile(name: string): Buffer {
  return readFileSync(path.join(CORPUS_DIR, name));
}

/** mulberry32: a small seeded random source for chunk boundaries. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Splits `bytes` at random boundaries (1 to `maxChunk` bytes), mid-character included. */
export function randomChunks(bytes: Buffer, random: () => number, maxChunk = 64): Buffer[] {
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < bytes.length; ) {
    const size = 1 + Math.floor(random() * maxChunk);
    chunks.push(bytes.subarray(offset, offset + size));
    offset += size;
  }
  return chunks;
}

/** Writes `chunks` one by one, yielding to the event loop between them so they travel apart. */
export async function writeChunks(res: ServerResponse, chunks: readonly Buffer[]): Promise<void> {
  for (const chunk of chunks) {
    if (res.destroyed) return;
    res.write(chunk);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A request the test server received. */
export interface Received {
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  /** The parsed JSON body. */
  readonly json: Record<string, unknown>;
  /** Resolves when the client closed the connection or the response ended. */
  readonly closed: Promise<void>;
}

/** Answers the n-th request (0-based). */
export type Handler = (req: IncomingMessage, res: ServerResponse, index: number) => void | Promise<void>;

/** A running test server. */
export interface TestServer {
  readonly url: string;
  readonly received: Received[];
  close(): Promise<void>;
}

/** Starts an HTTP server on 127.0.0.1, port 0. */
export async function startServer(handler: Handler): Promise<TestServer> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      const closed = new Promise<void>((resolve) => res.on('close', () => resolve()));
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(body) as Record<string, unknown>;
      } catch {
        json = {};
      }
      const index = received.length;
      received.push({ url: req.url ?? '', headers: req.headers, body, json, closed });
      void Promise.resolve(handler(req, res, index)).catch((error: unknown) => {
        res.destroy(error instanceof Error ? error : new Error(String(error)));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Serves `body` in seeded random chunks with the given content type. */
export async function replay(
  res: ServerResponse,
  body: Buffer,
  contentType: string,
  seed: number,
): Promise<void> {
  res.writeHead(200, { 'content-type': contentType });
  await writeChunks(res, randomChunks(body, seededRandom(seed)));
  res.end();
}

/** A minimal request; override what a test cares about. */
export function turnRequest(overrides: Partial<TurnRequest> = {}): TurnRequest {
  return { model: 'gpt-4o', system: 'You are terse.', input: 'Say hello.', tools: [], ...overrides };
}

/** Iterates a turn to its end, answering each tool call with `answer` (synchronously by default). */
export async function collect(
  turn: Turn,
  answer: (call: Extract<TurnEvent, { type: 'tool_call' }>) => string | undefined = () => undefined,
): Promise<TurnEvent[]> {
  const events: TurnEvent[] = [];
  for await (const event of turn) {
    events.push(event);
    if (event.type === 'tool_call') {
      const result = answer(event);
      if (result !== undefined) turn.respond(event.id, result);
    }
  }
  return events;
}

/** The one terminal event, checking there is exactly one and that it is last. */
export function terminal(events: readonly TurnEvent[]): Extract<TurnEvent, { type: 'completed' | 'error' }> {
  const terminals = events.filter((event) => event.type === 'completed' || event.type === 'error');
  if (terminals.length !== 1 || terminals[0] !== events.at(-1)) {
    throw new Error(
      `Expected exactly one terminal event at the end, got ${JSON.stringify(events.map((e) => e.type))}`,
    );
  }
  return terminals[0] as Extract<TurnEvent, { type: 'completed' | 'error' }>;
}

/** The concatenated text deltas. */
export function textOf(events: readonly TurnEvent[]): string {
  return events.map((event) => (event.type === 'text_delta' ? event.text : '')).join('');
}

/** The tool_call events. */
export function toolCallsOf(events: readonly TurnEvent[]): Extract<TurnEvent, { type: 'tool_call' }>[] {
  return events.filter(
    (event): event is Extract<TurnEvent, { type: 'tool_call' }> => event.type === 'tool_call',
  );
}

/** A sleep that records the delays asked for and returns at once. */
export function fakeSleep(): {
  readonly delays: number[];
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
} {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms, signal) => {
      delays.push(ms);
      if (signal.aborted) throw signal.reason;
    },
  };
}

/** A promise with its resolve function, for deterministic synchronisation. */
export function deferred<T = void>(): { readonly promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** The first `count` SSE events of a recording, with their blank-line separators. */
export function firstEvents(body: Buffer, count: number): string {
  return `${body.toString('utf8').split('\n\n').slice(0, count).join('\n\n')}\n\n`;
}
