/**
 * `troupe run --otlp`: an MCP tool call carries its `execute_tool` span's W3C trace context in the
 * `tools/call` request's `_meta`, so the server's spans join the run's trace.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { repoRoot, simulatedEnv, startCli, tempDir } from '../run-dir/helpers.ts';
import { completeTaskResponse, startMockServer, streamToolCall } from '../supervisor/mock-openai.ts';

interface OtlpSpan {
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
}

let dir: string;
let cleanup: () => void;
let otlp: Server;
let bodies: string[];
beforeEach(async () => {
  ({ dir, cleanup } = tempDir('troupe-mcp-trace-'));
  bodies = [];
  otlp = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => otlp.listen(0, '127.0.0.1', resolve));
});
afterEach(async () => {
  cleanup();
  await new Promise<void>((resolve) => otlp.close(() => resolve()));
});

function exportedSpans(): OtlpSpan[] {
  return bodies.flatMap((body) => {
    const parsed = JSON.parse(body) as {
      resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[];
    };
    return (parsed.resourceSpans ?? []).flatMap((resource) =>
      (resource.scopeSpans ?? []).flatMap((scope) => scope.spans ?? []),
    );
  });
}

describe('troupe run --otlp with an MCP tool', () => {
  it('sends the execute_tool span as _meta.traceparent of tools/call', async () => {
    const record = path.join(dir, 'mcp-calls.jsonl');
    mkdirSync(path.join(dir, '.troupe', 'agents'), { recursive: true });
    writeFileSync(
      path.join(dir, '.troupe', 'agents', 'keeper.md'),
      [
        '---',
        'name: keeper',
        'description: Stores what it is given.',
        'mcpServers:',
        '  - rec:',
        `      command: ${JSON.stringify(process.execPath)}`,
        `      args: ${JSON.stringify([path.join(repoRoot, 'test/fixtures/mcp/recording.mjs'), record])}`,
        '---',
        'Store what you are given.',
        '',
      ].join('\n'),
    );
    const model = await startMockServer({
      '/v1/chat/completions': (_req, res, index) => {
        if (index === 0) {
          streamToolCall(res, 'c1', 'mcp__rec__store_secrets', JSON.stringify({ name: 'a', secrets: ['b'] }));
        } else completeTaskResponse(res, { stored: true });
      },
    });
    try {
      const endpoint = `http://127.0.0.1:${(otlp.address() as AddressInfo).port}`;
      const run = startCli(
        [
          'run',
          'keeper',
          '--task',
          'Store a.',
          '--journal',
          path.join(dir, 'run.jsonl'),
          '--model',
          'mock',
        ].concat(['--allow', 'mcp__rec', '--otlp', endpoint]),
        {
          cwd: dir,
          env: simulatedEnv({ OPENAI_BASE_URL: model.url('/v1'), OPENAI_API_KEY: 'test-key-1234' }),
        },
      );
      expect(await run.exited, run.stderr()).toBe(0);
    } finally {
      await model.close();
    }
    const calls = readFileSync(record, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { _meta?: Record<string, unknown> });
    const spans = exportedSpans();
    const tool = spans.find((span) => span.name === 'execute_tool mcp__rec__store_secrets');
    expect(tool, spans.map((span) => span.name).join(', ')).toBeDefined();
    expect(calls).toHaveLength(1);
    expect(calls[0]?._meta?.traceparent).toBe(`00-${tool?.traceId}-${tool?.spanId}-01`);
  }, 60_000);
});
