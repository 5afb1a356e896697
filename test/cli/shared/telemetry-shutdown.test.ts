/**
 * The CLI's OTLP export (`--otlp`): the root span's error status is masked like every other span
 * text, and a final flush that fails still shuts the tracer provider down.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startTelemetry } from '../../../src/cli/shared/telemetry.ts';
import { captureIO } from '../../run-dir/helpers.ts';

const KEY = 'sk-rootSpan7Wm4QpZtK2vN9xRb5cYh3sLd';

let server: Server;
let bodies: string[];
let url: string;
beforeEach(async () => {
  bodies = [];
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
});
afterEach(async () => {
  vi.restoreAllMocks();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('CLI telemetry', () => {
  it('masks a key in the error message the root span ends with', async () => {
    const telemetry = await startTelemetry(
      { url, serviceName: 'troupe-test', captureContent: false },
      captureIO(),
    );
    await expect(
      telemetry.within('plan', () => Promise.reject(new Error(`401: Incorrect API key provided: ${KEY}`))),
    ).rejects.toThrow('401');
    await telemetry.shutdown();
    const sent = bodies.join('\n');
    expect(sent).toContain('invoke_workflow plan');
    expect(sent).toContain('Incorrect API key provided: [REDACTED]');
    expect(sent).not.toContain(KEY);
  });

  it('shuts the provider down when the final flush fails, and says so once', async () => {
    vi.spyOn(NodeTracerProvider.prototype, 'forceFlush').mockRejectedValue(new Error('collector is down'));
    const shutdown = vi.spyOn(NodeTracerProvider.prototype, 'shutdown');
    const io = captureIO();
    const telemetry = await startTelemetry({ url, serviceName: 'troupe-test', captureContent: false }, io);
    await telemetry.within('plan', () => Promise.resolve('ok'));
    await telemetry.shutdown();
    expect(shutdown).toHaveBeenCalledTimes(1);
    expect(io.err()).toBe(`troupe: could not export traces to ${url}: collector is down\n`);
  });
});
