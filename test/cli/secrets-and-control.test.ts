/**
 * What a model says reaches disk and the terminal only redacted and printable: a secret in an
 * answer or in a provider error is absent from every file of the run directory, the HTML report and
 * everything the CLI prints, and terminal control characters from model text never reach the
 * terminal.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { LEAKY_ANSWER, SECRETS } from '../fixtures/cli/leaky-model.ts';
import { captureIO, simulatedEnv, startCli, tempDir } from '../run-dir/helpers.ts';
import { startMockServer } from '../supervisor/mock-openai.ts';

const LEAKY_MODEL = fileURLToPath(new URL('../fixtures/cli/leaky-model.ts', import.meta.url));
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-secrets-'));
});
afterEach(() => cleanup());

function filesBelow(root: string): string[] {
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .map((name) => path.join(root, name))
    .filter((file) => statSync(file).isFile());
}

function leaksIn(text: string): string[] {
  return Object.entries(SECRETS)
    .filter(([, secret]) => text.includes(secret))
    .map(([name]) => name);
}

describe('secrets and control characters from a model', () => {
  it('are absent from every run-directory file, the HTML report and the fanout and report output', async () => {
    // The answer really carries them: the test would prove nothing otherwise.
    expect(leaksIn(LEAKY_ANSWER)).toEqual(expect.arrayContaining(['openai', 'pemBody', 'redisPassword']));
    expect(LEAKY_ANSWER).toMatch(CONTROL);
    const plan = path.join(dir, 'plan.yaml');
    writeFileSync(
      plan,
      [
        `provider: { module: ${JSON.stringify(LEAKY_MODEL)} }`,
        'threads: 1',
        `cwd: ${JSON.stringify(dir)}`,
        'runs:',
        '  - agent: worker',
        '    task: Review the configuration.',
        `    metadata: { apiKey: ${SECRETS.metadataKey}, password: ${SECRETS.metadataPassword}, team: blue }`,
        '  - agent: worker',
        '    task: Please fail now.',
      ].join('\n'),
    );
    const runDir = path.join(dir, 'run');
    const fanout = captureIO();
    expect([await main(['fanout', plan, '--out', runDir], fanout), fanout.err()]).toEqual([1, '']);
    const report = captureIO();
    expect([await main(['report', runDir], report), report.err()]).toEqual([0, '']);
    const html = path.join(dir, 'report.html');
    expect(await main(['report', runDir, '--html', html], captureIO())).toBe(0);

    const files = [...filesBelow(runDir), html];
    expect(files.map((file) => path.basename(file))).toEqual(
      expect.arrayContaining(['plan.json', 'results.jsonl', 'summary.json', 'report.html']),
    );
    for (const file of files) expect([file, leaksIn(readFileSync(file, 'utf8'))]).toEqual([file, []]);
    for (const [name, printed] of Object.entries({
      'fanout stdout': fanout.out(),
      'fanout stderr': fanout.err(),
      'report stdout': report.out(),
    })) {
      expect([name, leaksIn(printed)]).toEqual([name, []]);
      expect([name, CONTROL.test(printed.replaceAll('\n', ''))]).toEqual([name, false]);
    }
    expect(readFileSync(html, 'utf8')).not.toMatch(CONTROL);
    // Masked, not dropped: the reader still sees where each secret was.
    const results = readFileSync(path.join(runDir, 'results.jsonl'), 'utf8');
    expect(results).toContain('postgres://app:[REDACTED]@db.internal');
    expect(results).toContain('-----BEGIN RSA PRIVATE KEY-----\\n[REDACTED]\\n-----END RSA PRIVATE KEY-----');
    expect(JSON.parse(readFileSync(path.join(runDir, 'plan.json'), 'utf8')).runs[0].metadata).toEqual({
      apiKey: '[REDACTED]',
      password: '[REDACTED]',
      team: 'blue',
    });
    expect(report.out()).toMatch(/provider_error/);
  });

  it('are absent from what troupe run prints and journals, for an answer and for an error body', async () => {
    const server = await startMockServer({
      '/ok/chat/completions': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const args = JSON.stringify({ result: { summary: LEAKY_ANSWER } });
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
                  content: LEAKY_ANSWER,
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
      '/denied/chat/completions': (_req, res) => {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${SECRETS.errorKey}` } }));
      },
    });
    try {
      for (const [route, exit] of [
        ['ok', 0],
        ['denied', 1],
      ] as const) {
        const journal = path.join(dir, `${route}.jsonl`);
        const run = startCli(
          ['run', 'worker', '--task', 'Check it.', '--journal', journal, '--model', 'mock'],
          {
            cwd: dir,
            env: simulatedEnv({
              OPENAI_BASE_URL: server.url(`/${route}`),
              OPENAI_API_KEY: 'sk-test-key-0000000000',
            }),
          },
        );
        expect([route, await run.exited]).toEqual([route, exit]);
        const printed = run.stdout() + run.stderr();
        expect([route, leaksIn(printed)]).toEqual([route, []]);
        expect([route, CONTROL.test(printed.replaceAll('\n', ''))]).toEqual([route, false]);
        expect([route, leaksIn(readFileSync(journal, 'utf8'))]).toEqual([route, []]);
        if (route === 'ok') expect(run.stdout()).toContain('Cache: redis://:[REDACTED]@cache.internal');
        else expect(run.stderr()).toContain('Incorrect API key provided: [REDACTED]');
      }
    } finally {
      await server.close();
    }
  });
});
