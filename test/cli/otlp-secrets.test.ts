/**
 * A user's run against a collector: a fan-out whose tools and model echo a key (in a result, a
 * thrown error, the uncaught error that kills a thread, a provider's 401 message) exports its
 * spans over OTLP/HTTP to a receiver here, and the key is in none of what the run leaves: the
 * exported spans, the run directory (journals, events.jsonl, results), `troupe report` (text, JSON,
 * HTML), `troupe show` (text and JSON) and the CLI's output.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { LEAKED_BEARER, LEAKED_KEY } from '../fixtures/telemetry/leaky-tools.ts';
import { captureIO, simulatedEnv, startCli, tempDir } from '../run-dir/helpers.ts';

const fixture = (name: string): string =>
  fileURLToPath(new URL(`../fixtures/telemetry/${name}`, import.meta.url));
const BEARER_VALUE = LEAKED_BEARER.slice('Bearer '.length);
const leaks = (text: string): boolean => text.includes(LEAKED_KEY) || text.includes(BEARER_VALUE);

let dir: string;
let cleanup: () => void;
let server: Server;
let bodies: string[];
beforeEach(async () => {
  ({ dir, cleanup } = tempDir('troupe-otlp-secrets-'));
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
});
afterEach(async () => {
  cleanup();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function filesBelow(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .map((name) => path.join(root, name))
    .filter((file) => statSync(file).isFile());
}

describe('troupe fanout --otlp with a key echoed by tools and the model', () => {
  it('the key is in no exported span, run-directory file, report, transcript or CLI output', async () => {
    writeFileSync(
      path.join(dir, 'plan.yaml'),
      [
        'name: leaky',
        `provider: { module: ${JSON.stringify(fixture('leaky-provider.ts'))} }`,
        `toolModules: [{ module: ${JSON.stringify(fixture('leaky-tools.ts'))}, export: leakyTools }]`,
        'threads: 2',
        'runs:',
        '  - agent: worker',
        '    task: call leak_result',
        '  - agent: worker',
        '    task: call leak_throw',
        '  - agent: worker',
        '    task: keep calling leak_crash',
        '  - agent: worker',
        '    task: Please fail now.',
        '',
      ].join('\n'),
    );
    const { port } = server.address() as AddressInfo;
    const runDir = path.join(dir, 'run');
    const fanout = startCli(
      ['fanout', 'plan.yaml', '--out', runDir, '--otlp', `http://127.0.0.1:${port}`, '--otlp-content'],
      { cwd: dir, env: simulatedEnv() },
    );
    expect(await fanout.exited, fanout.stderr()).toBe(1);
    const results = readFileSync(path.join(runDir, 'results.jsonl'), 'utf8');
    // Each route to the key was taken: a crash past the restart cap and a provider's 401.
    expect(results).toContain('"reason":"crashed"');
    expect(results).toContain('Incorrect API key provided: [REDACTED]');

    const outputs: Record<string, string> = {
      'fanout stdout': fanout.stdout(),
      'fanout stderr': fanout.stderr(),
      spans: bodies.join('\n'),
    };
    // The crash is on the spans, its message masked (which agents shared the dying thread, and so
    // which results it took with it before they were forwarded, varies).
    expect(outputs.spans).toContain('troupe.thread.crashed');
    expect(outputs.spans).toContain('uncaught: key [REDACTED] (Bearer [REDACTED])');
    for (const file of filesBelow(runDir)) outputs[path.relative(dir, file)] = readFileSync(file, 'utf8');
    expect(Object.keys(outputs)).toEqual(expect.arrayContaining(['run/events.jsonl']));
    const html = path.join(dir, 'report.html');
    for (const args of [
      ['report', runDir],
      ['report', runDir, '--json'],
      ['report', runDir, '--html', html],
    ]) {
      const io = captureIO();
      expect(await main(args, io)).toBe(0);
      outputs[args.join(' ')] = io.out() + io.err();
    }
    outputs['report.html'] = readFileSync(html, 'utf8');
    for (const index of ['0', '1', '2', '3']) {
      for (const flags of [['--full', '--inputs'], ['--json']]) {
        const io = captureIO();
        expect(await main(['show', runDir, index, ...flags], io)).toBe(0);
        outputs[`show ${index} ${flags.join(' ')}`] = io.out() + io.err();
      }
    }
    for (const [name, text] of Object.entries(outputs)) expect([name, leaks(text)]).toEqual([name, false]);
  }, 120_000);
});
