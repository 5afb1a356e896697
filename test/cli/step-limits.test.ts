/**
 * Issue 14's done-means for the CLI: `troupe run` and `troupe fanout` against a loopback model that
 * calls a tool on every request stop at exactly the step limit (counted by the server), show the
 * usage against the budget, and mark estimated figures; a fan-out stops at its run budget.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { costOf, DEFAULT_PRICES } from '../../src/providers/pricing.ts';
import type { RunSummary } from '../../src/run-dir/summary.ts';
import { PROVIDER_ENV, Project, runCli } from '../fixtures/cli/cli-helpers.ts';
import { startToolLoopServer, type ToolLoopServer } from '../fixtures/loopback/tool-loop-server.ts';
import { readResults, startCli } from '../run-dir/helpers.ts';

const REVIEWER = `---
name: reviewer
description: Reviews the files the task names.
tools: [read_file]
---
You review files.
`;

let project: Project;
let server: ToolLoopServer | undefined;
let saved: Record<string, string | undefined>;

beforeEach(() => {
  project = new Project({ 'a.txt': 'alpha\n', '.troupe/agents/reviewer.md': REVIEWER });
  saved = Object.fromEntries(['HOME', ...PROVIDER_ENV].map((name) => [name, process.env[name]]));
  for (const name of PROVIDER_ENV) delete process.env[name];
  process.env.HOME = project.home;
});

afterEach(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await server?.close();
  server = undefined;
  project.remove();
});

describe('troupe run against a model that always calls a tool', () => {
  it('--max-steps 2 sends exactly 2 model requests and fails with step_limit, showing usage against the budget', async () => {
    server = await startToolLoopServer();
    process.env.OPENAI_BASE_URL = server.baseURL;
    const result = await runCli(
      'run',
      'reviewer',
      '--task',
      'Review a.txt',
      '--max-steps',
      '2',
      '--cwd',
      project.root,
    );
    expect(result.code).toBe(1);
    expect(server.requests()).toBe(2);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toContain('limits: 2 steps · 1.0M tokens · no cost limit · no time limit');
    expect(lines.filter((line) => line.includes(' tokens used'))).toEqual([
      expect.stringMatching(
        /^round 1 · step 1 · 100 tokens in · 20 out · \d+ ms · \$[\d.]+ · 120 of 1\.0M tokens used$/,
      ),
      expect.stringMatching(
        /^round 1 · step 2 · 100 tokens in · 20 out · \d+ ms · \$[\d.]+ · 240 of 1\.0M tokens used$/,
      ),
    ]);
    expect(result.stderr).toMatch(
      /failed after 1 round \(2 steps\) · 200 tokens in · 40 out · \$[\d.]+\nreason: step_limit · code: step_limit/,
    );
  });

  it('estimates the tokens of a server that reports none, stops at --max-tokens and says the figures are estimated', async () => {
    server = await startToolLoopServer({ usage: null });
    process.env.OPENAI_BASE_URL = server.baseURL;
    const result = await runCli(
      'run',
      'reviewer',
      '--task',
      'Review a.txt',
      '--max-tokens',
      '3000',
      '--json',
      '--cwd',
      project.root,
    );
    expect(result.code).toBe(1);
    const lines = result.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const receipts = lines.filter((line) => line.type === 'ProviderReceipt');
    expect(receipts).toHaveLength(server.requests());
    const outcome = lines.at(-1);
    expect(outcome).toMatchObject({
      type: 'Outcome',
      status: 'failed',
      reason: 'budget',
      error: { code: 'token_budget' },
      usage: { estimated: true },
    });
  });
});

describe('troupe fanout against a model that always calls a tool', () => {
  function writePlan(lines: readonly string[]): void {
    writeFileSync(project.path('plan.yaml'), `${lines.join('\n')}\n`);
  }

  function onlyRunDir(): string {
    const runs = project.path('.troupe', 'runs');
    const [name] = readdirSync(runs);
    return path.join(runs, name ?? '');
  }

  it('stops every agent at exactly maxSteps requests, with the usage and cost the server reported', async () => {
    server = await startToolLoopServer();
    writePlan([
      'provider: openai',
      `providerOptions: { baseURL: "${server.baseURL}", apiKey: k, maxRetries: 0 }`,
      'model: gpt-4.1-mini',
      'threads: 1',
      'limits: { maxSteps: 3 }',
      'runs:',
      '  - { agent: reviewer, task: Review a.txt }',
      '  - { agent: reviewer, task: Review a.txt again }',
    ]);
    const run = startCli(['fanout', 'plan.yaml'], { cwd: project.root, env: project.env() });
    expect(await run.exited).toBe(1);
    expect(server.requests()).toBe(6);
    const runDir = onlyRunDir();
    const results = readResults(path.join(runDir, 'results.jsonl'));
    expect(results.map((line) => [line.status, line.reason, line.steps])).toEqual([
      ['failed', 'step_limit', 3],
      ['failed', 'step_limit', 3],
    ]);
    const summary = JSON.parse(readFileSync(path.join(runDir, 'summary.json'), 'utf8')) as RunSummary;
    const usage = { inputTokens: 600, outputTokens: 120, cachedInputTokens: 0, reasoningTokens: 0 };
    expect(summary.usage).toEqual(usage);
    const price = DEFAULT_PRICES['gpt-4.1-mini'];
    if (!price) throw new Error('gpt-4.1-mini has a price');
    expect(summary.costUsd).toBeCloseTo(costOf(usage, price), 12);
    expect(summary.failures).toEqual({ step_limit: 2 });
  });

  it('marks estimated figures in results and summary, and stops the run at its token budget', async () => {
    server = await startToolLoopServer({ usage: null });
    writePlan([
      'provider: openai',
      `providerOptions: { baseURL: "${server.baseURL}", apiKey: k, maxRetries: 0 }`,
      'model: gpt-4.1-mini',
      'threads: 1',
      'concurrency: 1',
      'runLimits: { maxTotalTokens: 5000 }',
      'runs:',
      '  - { agent: reviewer, task: Review a.txt }',
      '  - { agent: reviewer, task: Review a.txt again }',
    ]);
    const run = startCli(['fanout', 'plan.yaml'], { cwd: project.root, env: project.env() });
    expect(await run.exited).toBe(1);
    expect(run.stdout()).toContain('budget: 5.0k tokens · no cost limit');
    expect(run.stdout()).toMatch(/budget +spent: the run used \d+ tokens; its budget/);
    const runDir = onlyRunDir();
    const summary = JSON.parse(readFileSync(path.join(runDir, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.budgetSpent).toMatch(/^the run used \d+ tokens/);
    expect(summary.runLimits).toEqual({ maxTotalTokens: 5000, maxCostUsd: 0 });
    expect(summary.usage.estimated).toBe(true);
    expect(summary.usage.inputTokens + summary.usage.outputTokens).toBeGreaterThanOrEqual(5000);
    const results = readResults(path.join(runDir, 'results.jsonl'));
    expect(results[0]).toMatchObject({ status: 'failed', reason: 'cancelled', usage: { estimated: true } });
    expect(run.stdout()).toContain("stopped: the run's budget is spent");
    // A plain resume would run nothing: the hint says how to go on.
    expect(run.stdout()).toContain(
      `finish: troupe resume ${runDir} --max-run-tokens N (more than 5000; 0 = unlimited)`,
    );

    // Resuming runs nothing while the budget stays spent; raising it lets the run go on.
    const stuck = startCli(['resume', runDir], { cwd: project.root, env: project.env() });
    expect(await stuck.exited).toBe(1);
    expect(stuck.stdout()).toMatch(/budget +spent: the run used \d+ tokens/);
    const requestsBefore = server.requests();
    const raised = startCli(['resume', runDir, '--max-run-tokens', '0', '--json'], {
      cwd: project.root,
      env: project.env(),
    });
    await raised.exited;
    expect(server.requests()).toBeGreaterThan(requestsBefore);
    expect(raised.stdout()).toContain('"runLimits":{"maxTotalTokens":0,"maxCostUsd":0}');
    // Recorded: a later resume (and the summary) see the budget this session ran with.
    const recorded = JSON.parse(readFileSync(path.join(runDir, 'plan.json'), 'utf8')) as RunSummary;
    expect(recorded.runLimits).toEqual({ maxTotalTokens: 0, maxCostUsd: 0 });
    const after = JSON.parse(readFileSync(path.join(runDir, 'summary.json'), 'utf8')) as RunSummary;
    expect(after.runLimits).toEqual({ maxTotalTokens: 0, maxCostUsd: 0 });
  });

  it('says at the start that a cost budget cannot be enforced for a model without a price, and reports its cost as unknown', async () => {
    server = await startToolLoopServer();
    writePlan([
      'provider: openai',
      `providerOptions: { baseURL: "${server.baseURL}", apiKey: k, maxRetries: 0 }`,
      'model: my-local-llama',
      'threads: 1',
      'limits: { maxSteps: 1 }',
      'runLimits: { maxCostUsd: 1 }',
      'runs:',
      '  - { agent: reviewer, task: Review a.txt }',
    ]);
    const run = startCli(['fanout', 'plan.yaml'], { cwd: project.root, env: project.env() });
    expect(await run.exited).toBe(1);
    expect(run.stdout()).toContain(
      "warning: the run's cost budget ($1) cannot be enforced: no price is known for model my-local-llama",
    );
    const runDir = onlyRunDir();
    const summary = JSON.parse(readFileSync(path.join(runDir, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary).toMatchObject({ costUsd: null, unpricedAgents: 1 });
    expect(readResults(path.join(runDir, 'results.jsonl'))[0]).toMatchObject({ costUsd: null });
    expect(run.stdout()).toMatch(/cost unknown \(no price for the model of 1 agent\(s\)\)/);
  });
});
