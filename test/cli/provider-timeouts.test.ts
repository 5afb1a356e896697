/**
 * `--request-timeout-ms` / `--idle-timeout-ms` (and `TROUPE_REQUEST_TIMEOUT_MS` /
 * `TROUPE_IDLE_TIMEOUT_MS`) reach the provider of `troupe run` and `troupe fanout`: against a
 * loopback model that sends its headers and then nothing, the run fails `timeout` naming the limit
 * it was given, instead of holding the agent for the default two minutes. Bad values fail the
 * command before anything runs.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJournal } from '../../src/journal/reader.ts';
import { PROVIDER_ENV, Project, runCli } from '../fixtures/cli/cli-helpers.ts';
import { readResults, repoRoot, startCli } from '../run-dir/helpers.ts';

const TIMEOUT_ENV = ['TROUPE_REQUEST_TIMEOUT_MS', 'TROUPE_IDLE_TIMEOUT_MS'];

let project: Project;
let saved: Record<string, string | undefined>;
let server: Server | undefined;
let requests = 0;

/** A model server that answers every request with its headers, then never another byte. */
async function startSilentServer(): Promise<string> {
  requests = 0;
  server = createServer((_req, res) => {
    requests += 1;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

beforeEach(() => {
  project = new Project({ 'a.txt': 'alpha\n' });
  saved = Object.fromEntries(
    ['HOME', ...PROVIDER_ENV, ...TIMEOUT_ENV].map((name) => [name, process.env[name]]),
  );
  for (const name of [...PROVIDER_ENV, ...TIMEOUT_ENV]) delete process.env[name];
  process.env.HOME = project.home;
});

afterEach(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  project.remove();
});

function failureOf(journal: string): unknown {
  return readJournal(journal).events.find((event) => event.type === 'Failed');
}

describe('troupe run with provider time limits', () => {
  it('--idle-timeout-ms ends a silent stream with `timeout` naming that limit', async () => {
    // 1,500 ms, not less: the server runs on this process's event loop, and a loaded machine can
    // hold the loop past a shorter limit before the server has even taken the request.
    process.env.OPENAI_BASE_URL = await startSilentServer();
    const journal = project.path('run.jsonl');
    const result = await runCli(
      'run',
      'reader',
      '--task',
      'Read a.txt',
      '--cwd',
      project.root,
      '--journal',
      journal,
      '--idle-timeout-ms',
      '1500',
    );
    expect(result.code).toBe(1);
    expect(requests).toBeGreaterThan(0);
    expect(failureOf(journal)).toMatchObject({
      reason: 'provider_error',
      error: { code: 'timeout', fields: { idleTimeoutMs: 1500, provider: 'openai' } },
    });
    expect(result.stderr).toContain('openai sent nothing for 1500 ms; the request was abandoned.');
  });

  it('TROUPE_REQUEST_TIMEOUT_MS sets the request limit when no flag does', async () => {
    process.env.OPENAI_BASE_URL = await startSilentServer();
    process.env.TROUPE_REQUEST_TIMEOUT_MS = '250';
    const journal = project.path('run.jsonl');
    const result = await runCli(
      'run',
      'reader',
      '--task',
      'Read a.txt',
      '--cwd',
      project.root,
      '--journal',
      journal,
    );
    expect(result.code).toBe(1);
    expect(failureOf(journal)).toMatchObject({
      reason: 'provider_error',
      error: { code: 'timeout', fields: { timeoutMs: 250 } },
    });
    expect(result.stderr).toContain('openai did not finish a request within 250 ms.');
  });

  it('refuses a variable that is not a positive integer, before a journal exists', async () => {
    process.env.OPENAI_BASE_URL = await startSilentServer();
    process.env.TROUPE_IDLE_TIMEOUT_MS = '5s';
    const journal = project.path('run.jsonl');
    const result = await runCli(
      'run',
      'reader',
      '--task',
      'Read a.txt',
      '--cwd',
      project.root,
      '--journal',
      journal,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'troupe: invalid_option: Expected TROUPE_IDLE_TIMEOUT_MS to be a positive integer (milliseconds) up to 2147483647, got `"5s"` (string)',
    );
    expect(requests).toBe(0);
    expect(readdirSync(project.root)).not.toContain('run.jsonl');
  });

  it('gives the simulated model --request-timeout-ms, and warns of the idle limit alone', async () => {
    const journal = project.path('run.jsonl');
    const result = await runCli(
      'run',
      'reader',
      '--task',
      'Read a.txt',
      '--cwd',
      project.root,
      '--journal',
      journal,
      '--provider',
      'simulated',
      '--request-timeout-ms',
      '5000',
    );
    expect(result.code).toBe(0);
    // The simulated model times its latency by the request limit: nothing to warn of.
    expect(result.stderr).not.toContain('has no effect');

    const resumed = await runCli(
      'resume',
      journal,
      '--request-timeout-ms',
      '5000',
      '--idle-timeout-ms',
      '300',
    );
    expect(resumed.stderr).toContain(
      'troupe: warning: --idle-timeout-ms has no effect: provider simulated is the simulated model, which streams nothing whose silence could be timed (the request time limit times its latency)',
    );
    expect(resumed.stderr).not.toContain('--request-timeout-ms has');
  });

  it('warns, naming the idle variable alone, when both are set for the simulated model', async () => {
    process.env.TROUPE_REQUEST_TIMEOUT_MS = '5000';
    process.env.TROUPE_IDLE_TIMEOUT_MS = '4000';
    const result = await runCli('run', 'reader', '--task', 'Read a.txt', '--cwd', project.root);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      'troupe: warning: TROUPE_IDLE_TIMEOUT_MS has no effect: provider simulated is the simulated model',
    );
    expect(result.stderr).not.toContain('TROUPE_REQUEST_TIMEOUT_MS');
  });

  it('refuses a flag that is not a positive integer', async () => {
    const result = await runCli(
      'run',
      'reader',
      '--task',
      'Read a.txt',
      '--cwd',
      project.root,
      '--request-timeout-ms',
      '0',
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'Expected a positive integer (milliseconds) up to 2147483647, got `"0"` (string).',
    );
  });

  it('refuses a limit past the longest timer delay, which failed every request at once', async () => {
    for (const flag of ['--request-timeout-ms', '--idle-timeout-ms']) {
      const result = await runCli(
        'run',
        'reader',
        '--task',
        'Read a.txt',
        '--cwd',
        project.root,
        flag,
        '2147483648',
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('up to 2147483647, got `"2147483648"` (string).');
    }
    process.env.TROUPE_REQUEST_TIMEOUT_MS = '9999999999';
    const result = await runCli('run', 'reader', '--task', 'Read a.txt', '--cwd', project.root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'Expected TROUPE_REQUEST_TIMEOUT_MS to be a positive integer (milliseconds) up to 2147483647',
    );
  });
});

describe('troupe fanout with provider time limits', () => {
  it('--idle-timeout-ms travels in plan.json and fails each agent with `timeout`', async () => {
    const baseURL = await startSilentServer();
    writeFileSync(
      project.path('plan.yaml'),
      [
        'provider: openai',
        `providerOptions: { baseURL: "${baseURL}", apiKey: k, maxRetries: 0, idleTimeoutMs: 600000 }`,
        'model: gpt-4.1-mini',
        'threads: 1',
        'runs:',
        '  - { agent: reader, task: Read a.txt }',
        '',
      ].join('\n'),
    );
    const run = startCli(['fanout', 'plan.yaml', '--idle-timeout-ms', '300'], {
      cwd: project.root,
      env: project.env({ TROUPE_REQUEST_TIMEOUT_MS: '400000' }),
    });
    expect(await run.exited).toBe(1);
    const runs = project.path('.troupe', 'runs');
    const runDir = path.join(runs, readdirSync(runs)[0] ?? '');
    const plan = JSON.parse(readFileSync(path.join(runDir, 'plan.json'), 'utf8')) as unknown;
    // The flag wins over the plan; the variable fills what neither names.
    expect(plan).toMatchObject({
      provider: { config: { options: { idleTimeoutMs: 300, timeoutMs: 400000 } } },
    });
    const results = readResults(path.join(runDir, 'results.jsonl'));
    expect(results).toMatchObject([
      {
        status: 'failed',
        reason: 'provider_error',
        error: { code: 'timeout', fields: { idleTimeoutMs: 300 } },
      },
    ]);
  });

  it('warns, naming the flag and the module, that a provider module is left its own time limits', async () => {
    writeFileSync(
      project.path('plan.yaml'),
      [
        'provider:',
        `  module: ${path.join(repoRoot, 'test/fixtures/cli/flaky-provider.ts')}`,
        'providerOptions:',
        `  markers: ${project.path('markers')}`,
        'toolModules:',
        `  - ${path.join(repoRoot, 'test/fixtures/engines/contract-tools.ts')}`,
        'threads: 1',
        'runs:',
        '  - { agent: worker, task: "Do steady." }',
        '',
      ].join('\n'),
    );
    const run = startCli(['fanout', 'plan.yaml', '--idle-timeout-ms', '300'], {
      cwd: project.root,
      env: project.env(),
    });
    expect(await run.exited, run.stderr()).toBe(0);
    expect(run.stderr()).toContain(
      'troupe: warning: --idle-timeout-ms has no effect: provider flaky-provider is a provider module, whose time limits are its own',
    );
    const runs = project.path('.troupe', 'runs');
    const plan = JSON.parse(
      readFileSync(path.join(runs, readdirSync(runs)[0] ?? '', 'plan.json'), 'utf8'),
    ) as { provider: { config: { options?: Record<string, unknown> } } };
    expect(plan.provider.config.options?.idleTimeoutMs).toBeUndefined();
  });
});

describe('troupe fanout and resume RUN_DIR on the simulated model', () => {
  it('--request-timeout-ms times its latency, in plan.json and again in a resume', async () => {
    writeFileSync(
      project.path('plan.yaml'),
      [
        'provider: simulated',
        'providerOptions: { latency: 600000 }',
        'threads: 1',
        'runs:',
        '  - { agent: reader, task: Read a.txt }',
        '',
      ].join('\n'),
    );
    const runDir = project.path('run');
    const first = startCli(
      ['fanout', 'plan.yaml', '--out', runDir, '--request-timeout-ms', '300', '--idle-timeout-ms', '200'],
      { cwd: project.root, env: project.env() },
    );
    expect(await first.exited, first.stderr()).toBe(1);
    expect(first.stderr()).toContain(
      'troupe: warning: --idle-timeout-ms has no effect: provider simulated is the simulated model',
    );
    expect(first.stderr()).not.toContain('--request-timeout-ms has');
    const planOf = () =>
      JSON.parse(readFileSync(path.join(runDir, 'plan.json'), 'utf8')) as {
        provider: { config: { options: Record<string, unknown> } };
      };
    expect(planOf().provider.config.options).toEqual({ latency: 600000, timeoutMs: 300 });
    expect(readResults(path.join(runDir, 'results.jsonl'))).toMatchObject([
      {
        status: 'failed',
        reason: 'provider_error',
        error: { code: 'timeout', fields: { provider: 'simulated', timeoutMs: 300 } },
      },
    ]);

    const resumed = startCli(['resume', runDir, '--retry-failed', '--request-timeout-ms', '250'], {
      cwd: project.root,
      env: project.env(),
    });
    expect(await resumed.exited, resumed.stderr()).toBe(1);
    expect(resumed.stderr()).not.toContain('has no effect');
    expect(readResults(path.join(runDir, 'results.jsonl')).at(-1)).toMatchObject({
      status: 'failed',
      error: { code: 'timeout', fields: { timeoutMs: 250 } },
    });
    expect(planOf().provider.config.options).toEqual({ latency: 600000, timeoutMs: 250 });
  });
});

describe('troupe resume RUN_DIR with provider time limits', () => {
  it('sets the limits of the resumed session over the recorded ones, and records them for the next', async () => {
    const baseURL = await startSilentServer();
    writeFileSync(
      project.path('plan.yaml'),
      [
        'provider: openai',
        `providerOptions: { baseURL: "${baseURL}", apiKey: k, maxRetries: 0 }`,
        'model: gpt-4.1-mini',
        'threads: 1',
        'runs:',
        '  - { agent: reader, task: Read a.txt }',
        '',
      ].join('\n'),
    );
    const runDir = project.path('run');
    const first = startCli(['fanout', 'plan.yaml', '--out', runDir, '--idle-timeout-ms', '300'], {
      cwd: project.root,
      env: project.env(),
    });
    expect(await first.exited).toBe(1);
    const planOf = () =>
      JSON.parse(readFileSync(path.join(runDir, 'plan.json'), 'utf8')) as {
        provider: { config: { options: Record<string, unknown> } };
      };
    expect(planOf().provider.config.options).toMatchObject({ idleTimeoutMs: 300 });

    const resumed = startCli(
      ['resume', runDir, '--retry-failed', '--idle-timeout-ms', '200', '--request-timeout-ms', '90000'],
      { cwd: project.root, env: project.env() },
    );
    expect(await resumed.exited, resumed.stderr()).toBe(1);
    const retried = readResults(path.join(runDir, 'results.jsonl'));
    expect(retried.at(-1)).toMatchObject({
      status: 'failed',
      error: { code: 'timeout', fields: { idleTimeoutMs: 200 } },
    });
    expect(planOf().provider.config.options).toMatchObject({ idleTimeoutMs: 200, timeoutMs: 90000 });

    // A later resume without the flags runs with what the last session used.
    const again = startCli(['resume', runDir, '--retry-failed'], { cwd: project.root, env: project.env() });
    expect(await again.exited, again.stderr()).toBe(1);
    expect(readResults(path.join(runDir, 'results.jsonl')).at(-1)).toMatchObject({
      error: { code: 'timeout', fields: { idleTimeoutMs: 200 } },
    });
  });
});
