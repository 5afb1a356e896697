/**
 * A model that read the configured API key (a value of no known shape, masked only because troupe
 * was configured with it) repeats it in its text and in its `complete_task` result. Everything
 * `troupe run` and `troupe fanout` leave for a person to read must hold it masked: what they print
 * (text and `--json`), the journals, the run directory (results.jsonl, summary.json, events.jsonl),
 * `troupe report` (text, JSON, HTML), `troupe show` (text, JSON) and the exported OTLP spans with
 * content on.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { simulatedEnv, startCli, tempDir } from '../run-dir/helpers.ts';
import { startMockServer } from '../supervisor/mock-openai.ts';

/** Shapeless: no pattern masks them; only troupe's knowing them as the provider's key does. */
const KEY = 'qz7Xw2mN4pL9vR3tK8yBc5';
/** ...and as the token the agent's own MCP server is given. */
const SERVER_TOKEN = 'Hv6rT1kWq9zL2mXp8dNs';
const SECRETS = [KEY, SERVER_TOKEN];
const TEXT = `I found the credentials ${KEY} and ${SERVER_TOKEN} in the environment.`;
/** An agent with an MCP server of its own (it fails to start: what matters is what it was given). */
const AGENT = [
  '---',
  'name: leaker',
  'description: Repeats what it read.',
  'mcpServers:',
  '  - vault:',
  '      command: node',
  '      args: ["-e", "process.exit(3)"]',
  '      env:',
  `        VAULT_TOKEN: ${SERVER_TOKEN}`,
  '---',
  'Answer with what you found.',
  '',
].join('\n');

let dir: string;
let cleanup: () => void;
let otlp: Server;
let spans: string[];
beforeEach(async () => {
  ({ dir, cleanup } = tempDir('troupe-echoed-key-'));
  spans = [];
  otlp = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      spans.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => otlp.listen(0, '127.0.0.1', resolve));
});
afterEach(async () => {
  cleanup();
  await new Promise<void>((resolve) => otlp.close(() => resolve()));
});

function filesBelow(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .map((name) => path.join(root, name))
    .filter((file) => statSync(file).isFile());
}

describe('an API key the model repeats', () => {
  it('is masked in everything troupe run and troupe fanout print, write and export', async () => {
    const model = await startMockServer({
      '/v1/chat/completions': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const args = JSON.stringify({ result: { summary: TEXT, key: { value: KEY } } });
        res.end(
          JSON.stringify({
            id: 'c',
            object: 'chat.completion',
            model: 'mock',
            choices: [
              {
                index: 0,
                finish_reason: 'tool_calls',
                message: {
                  role: 'assistant',
                  content: TEXT,
                  tool_calls: [
                    { id: 'c1', type: 'function', function: { name: 'complete_task', arguments: args } },
                  ],
                },
              },
            ],
            usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
          }),
        );
      },
    });
    try {
      const env = simulatedEnv({ OPENAI_BASE_URL: model.url('/v1'), OPENAI_API_KEY: KEY });
      const endpoint = `http://127.0.0.1:${(otlp.address() as AddressInfo).port}`;
      mkdirSync(path.join(dir, '.troupe', 'agents'), { recursive: true });
      writeFileSync(path.join(dir, '.troupe', 'agents', 'leaker.md'), AGENT);
      const outputs: Record<string, string> = {};
      for (const json of [false, true]) {
        const journal = path.join(dir, `run-${json}.jsonl`);
        const run = startCli(
          ['run', 'leaker', '--task', 'Find the key.', '--journal', journal, '--model', 'mock']
            .concat(['--otlp', endpoint, '--otlp-content'])
            .concat(json ? ['--json'] : []),
          { cwd: dir, env },
        );
        expect(await run.exited, run.stderr()).toBe(0);
        outputs[`run json=${json} stdout`] = run.stdout();
        outputs[`run json=${json} stderr`] = run.stderr();
        outputs[`run json=${json} journal`] = readFileSync(journal, 'utf8');
        // Masked, not dropped; and the journal still verifies.
        expect(run.stdout()).toContain('[REDACTED]');
        expect(verifyJournalFile(journal).ok).toBe(true);
      }

      writeFileSync(
        path.join(dir, 'plan.yaml'),
        [
          'name: echo',
          'model: mock',
          'threads: 1',
          'runs:',
          '  - agent: leaker',
          '    task: Find the key.',
          '',
        ].join('\n'),
      );
      const runDir = path.join(dir, 'out');
      const fanout = startCli(
        ['fanout', 'plan.yaml', '--out', runDir, '--otlp', endpoint, '--otlp-content'],
        {
          cwd: dir,
          env,
        },
      );
      expect(await fanout.exited, fanout.stderr()).toBe(0);
      outputs['fanout stdout'] = fanout.stdout();
      outputs['fanout stderr'] = fanout.stderr();
      for (const file of filesBelow(runDir)) outputs[path.relative(dir, file)] = readFileSync(file, 'utf8');
      expect(Object.keys(outputs)).toEqual(
        expect.arrayContaining(['out/results.jsonl', 'out/summary.json', 'out/events.jsonl']),
      );
      expect(outputs['out/results.jsonl']).toContain('[REDACTED]');

      // The CLI's readers run in a process that was never told the key: a fresh one, as a user's.
      const html = path.join(dir, 'report.html');
      for (const args of [
        ['report', runDir],
        ['report', runDir, '--json'],
        ['report', runDir, '--html', html],
        ['show', runDir, '0', '--full', '--inputs'],
        ['show', runDir, '0', '--json'],
      ]) {
        const reader = startCli(args, { cwd: dir, env: simulatedEnv({ OPENAI_API_KEY: KEY }) });
        expect([args.join(' '), await reader.exited, reader.stderr()]).toEqual([args.join(' '), 0, '']);
        outputs[args.join(' ')] = reader.stdout();
      }
      outputs['report.html'] = readFileSync(html, 'utf8');
      outputs.spans = spans.join('\n');
      expect(outputs.spans).toContain('gen_ai.tool.call.arguments');

      // The simulated provider checks that a key is there, not what it is: it must be proven to leak.
      for (const secret of SECRETS) expect(TEXT).toContain(secret);
      const leaks = Object.entries(outputs).flatMap(([name, text]) =>
        SECRETS.filter((secret) => text.includes(secret)).map((secret) => `${name}: ${secret}`),
      );
      expect(leaks).toEqual([]);
    } finally {
      await model.close();
    }
  }, 120_000);
});
