/** A loopback OpenAI-compatible server for supervisor tests: scripted per path, records requests. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  readonly path: string;
  readonly at: number;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, index: number) => void;

/** One server-sent event of a streamed chat completion: `delta`, and the finish reason when it ends. */
export function streamChunk(delta: unknown, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'mock', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

/** Streams a whole response that calls one tool `name` with `args` (JSON text) as call `id`. */
export function streamToolCall(res: ServerResponse, id: string, name: string, args: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const call = { index: 0, id, type: 'function', function: { name, arguments: args } };
  res.write(streamChunk({ tool_calls: [call] }));
  res.end(`${streamChunk({}, 'tool_calls')}data: [DONE]\n\n`);
}

/** Streams a whole response that answers `text`. */
export function streamText(res: ServerResponse, text: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(streamChunk({ content: text }));
  res.end(`${streamChunk({}, 'stop')}data: [DONE]\n\n`);
}

/** A chat completion that calls complete_task with `result`. */
export function completeTaskResponse(res: ServerResponse, result: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: 'cmpl',
      object: 'chat.completion',
      model: 'mock',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: `call_${Math.random().toString(36).slice(2)}`,
                type: 'function',
                function: { name: 'complete_task', arguments: JSON.stringify({ result }) },
              },
            ],
          },
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    }),
  );
}

export async function startMockServer(handlers: Record<string, Handler>) {
  const requests: Recorded[] = [];
  const closed: string[] = [];
  const counts = new Map<string, number>();
  const server = createServer((req, res) => {
    const prefix = Object.keys(handlers).find((p) => req.url?.startsWith(p));
    requests.push({ path: prefix ?? req.url ?? '', at: Date.now() });
    req.on('close', () => {
      if (!res.writableEnded) closed.push(prefix ?? '');
    });
    req.resume();
    req.on('end', () => {
      if (!prefix) {
        res.writeHead(404).end();
        return;
      }
      const index = counts.get(prefix) ?? 0;
      counts.set(prefix, index + 1);
      handlers[prefix]?.(req, res, index);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (prefix: string) => `http://127.0.0.1:${port}${prefix}`,
    requests,
    closed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
