/**
 * A collector that answers 500, never answers, or is not there does not fail a traced run: the
 * run's result and exit code are those of a run without export, and the lost export is one line on
 * stderr (docs/observability.md).
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { simulatedEnv, startCli, tempDir } from '../run-dir/helpers.ts';

let dir: string;
let cleanup: () => void;
let server: Server;
let mode: 'error' | 'stall';
beforeEach(async () => {
  ({ dir, cleanup } = tempDir('troupe-otlp-down-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (mode === 'error') res.writeHead(500, { 'content-type': 'application/json' }).end('{}');
      // 'stall': never answered; the exporter's timeout gives up on it.
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterEach(async () => {
  cleanup();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('troupe run --otlp against a receiver that fails', () => {
  for (const receiver of ['error', 'stall', 'down'] as const) {
    it(`a receiver that ${receiver === 'error' ? 'answers 500' : receiver === 'stall' ? 'never answers' : 'is not there'} costs the run nothing but a line on stderr`, async () => {
      mode = receiver === 'error' ? 'error' : 'stall';
      const { port } = server.address() as AddressInfo;
      // A closed port: the server's own, closed.
      const url =
        receiver === 'down'
          ? await closedPort().then((p) => `http://127.0.0.1:${p}`)
          : `http://127.0.0.1:${port}`;
      const run = startCli(['run', 'worker', '--task', 'Review a.md', '--otlp', url], {
        cwd: dir,
        env: simulatedEnv({ OTEL_EXPORTER_OTLP_TIMEOUT: '300' }),
      });
      expect(await run.exited, run.stderr()).toBe(0);
      expect(run.stdout()).toContain('[simulated]');
      expect(run.stderr()).toContain(`troupe: could not export traces to ${url}/v1/traces`);
    }, 60_000);
  }
});

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
