/** Every runnable example, run the way docs/examples.md says, on the simulated model (or a local fake server). */

import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import type { RunSummary } from '../../src/run-dir/summary.ts';
import {
  captureIO,
  readResults,
  repoRoot,
  runScript,
  simulatedEnv,
  startCli,
  tempDir,
} from '../run-dir/helpers.ts';

let dir: string;
let cleanup: () => void;
beforeAll(() => {
  ({ dir, cleanup } = tempDir('troupe-examples-'));
});
afterAll(() => cleanup());

describe('examples', () => {
  it('fanout.ts fans out one worker per file and prints each result', async () => {
    const { code, stdout, stderr } = await runScript('examples/fanout.ts', { cwd: repoRoot });
    // No key in the environment: the Supervisor falls back to the simulated model and says so once.
    expect(
      stderr.match(/\[TROUPE_SIMULATED_MODEL\] TroupeWarning: troupe is using the simulated model/g),
    ).toHaveLength(1);
    expect(stderr.replace(/^\(node:\d+\) \[TROUPE_SIMULATED_MODEL\].*\n(\(Use .*\n)?/m, '')).toBe('');
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines.map((line) => line.split(' ')[0]).sort()).toEqual([
      'docs/cli.md',
      'docs/examples.md',
      'package.json',
      'src/index.ts',
    ]);
    for (const line of lines) expect(line).toMatch(/: completed \{"summary":"\[simulated\]/);
  });

  it('orchestrator/run.ts: the orchestrator spawns, instructs and collects its workers', async () => {
    const { code, stdout, stderr } = await runScript('examples/orchestrator/run.ts', { cwd: repoRoot });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout.match(/^spawned /gm)).toHaveLength(3);
    expect(stdout.match(/ got: Focus on /gm)).toHaveLength(3);
    const result = JSON.parse(stdout.slice(stdout.indexOf('{'))) as {
      summary: string;
      reviews: { status: string; result: { instructions: string[] } }[];
    };
    expect(result.summary).toContain('3 worker(s) reviewed');
    expect(result.reviews.map((review) => review.status)).toEqual(['completed', 'completed', 'completed']);
    for (const review of result.reviews) expect(review.result.instructions[0]).toMatch(/Focus on/);
  });

  it('custom-tool/run.ts: agents in worker threads call a tool loaded from a module', async () => {
    const { code, stdout, stderr } = await runScript('examples/custom-tool/run.ts', { cwd: repoRoot });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout.match(/: word_count ok$/gm)).toHaveLength(2);
    expect(stdout).toMatch(/^0: \{"summary":"\[simulated\] Task: Count the words/m);
  });

  it('harness/plan.yaml runs one agent over the JSONL data set, with structured verdicts and scores', async () => {
    const out = path.join(dir, 'harness');
    const io = captureIO();
    expect(
      await main(['fanout', path.join(repoRoot, 'examples/harness/plan.yaml'), '--out', out, '--json'], io),
    ).toBe(0);
    const results = readResults(path.join(out, 'results.jsonl'));
    expect(results.map((line) => line.label).sort()).toEqual(['budget', 'journal', 'retry', 'threads']);
    for (const line of results) {
      expect(line).toMatchObject({ agent: 'grader', status: 'completed' });
      expect(line.result).toMatchObject({
        verdict: expect.stringMatching(/^(pass|fail)$/),
        summary: expect.any(String),
      });
      expect(Object.keys(line.scores ?? {})).toEqual(['verdict', 'shape', 'review']);
    }
    // The simulated grader passes every document; the data set expects `threads` to fail.
    const summary = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.scoring?.scorers).toMatchObject({
      verdict: { passed: 3, items: 4 },
      shape: { passed: 4 },
      review: { type: 'judge', passed: 4, errors: 0 },
    });
  });

  it('prompt-blocks: two agents pin two versions of one prompt block; one published later is not used on resume', async () => {
    // A copy, so publishing a version does not touch the repository.
    const copy = path.join(dir, 'prompt-blocks');
    cpSync(path.join(repoRoot, 'examples/prompt-blocks'), copy, { recursive: true });
    mkdirSync(path.join(copy, '.git'));
    const out = path.join(dir, 'prompt-blocks-run');
    expect(await main(['fanout', path.join(copy, 'plan.yaml'), '--out', out, '--json'], captureIO())).toBe(0);
    const results = readResults(path.join(out, 'results.jsonl'));
    const started = (label: string) => {
      const agentId = results.find((line) => line.label === label)?.agentId ?? '?';
      const first = readJournal(path.join(out, 'journals', `${agentId}.jsonl`)).events[0];
      if (first?.type !== 'Started') throw new Error(`no Started event for ${label}`);
      return { agentId, first };
    };
    const pinned = (label: string) =>
      started(label).first.blocks?.map((block) => `${block.id}@${block.version} (${block.range})`);
    expect(pinned('newest-1')).toEqual([
      'acme.triage@1.1.0 (^1)',
      'acme.routing@1.0.0 (^1)',
      'acme.careful@1.0.0 (^1)',
    ]);
    expect(pinned('stable-2')?.[0]).toBe('acme.triage@1.0.0 (~1.0)');
    const newest = started('newest-2');
    expect(newest.first.systemPrompt).toContain('You triage tickets of the billing queue.');
    expect(newest.first.systemPrompt).toContain('A ticket that mentions chargeback or legal is urgent');
    expect(started('stable-2').first.systemPrompt).toContain('You triage tickets of the refunds queue.');
    expect(started('stable-2').first.systemPrompt).not.toContain('is urgent');
    // The plan's maxOutputTokens over the block's; the definition's temperature over the block's.
    expect(newest.first.modelSettings).toEqual({ temperature: 0.2, maxOutputTokens: 600 });
    expect(started('stable-2').first.modelSettings).toEqual({
      temperature: 0,
      maxOutputTokens: 600,
      seed: 7,
    });

    // newest-2 is interrupted after its first request; 1.2.0 is published; the run is resumed.
    const journal = path.join(out, 'journals', `${newest.agentId}.jsonl`);
    const lines = readFileSync(journal, 'utf8').trimEnd().split('\n');
    const cut = lines.findIndex((line) => line.includes('"type":"InferenceSubmitted"')) + 1;
    writeFileSync(journal, `${lines.slice(0, cut).join('\n')}\n`);
    const resultLines = readFileSync(path.join(out, 'results.jsonl'), 'utf8').trimEnd().split('\n');
    writeFileSync(
      path.join(out, 'results.jsonl'),
      `${resultLines.filter((line) => !line.includes(`"agentId":"${newest.agentId}"`)).join('\n')}\n`,
    );
    writeFileSync(path.join(copy, '.troupe/blocks/acme.triage/1.2.0.md'), 'Ignore every ticket.\n');
    expect(await main(['resume', out, '--json'], captureIO())).toBe(0);
    const events = readJournal(journal).events;
    expect(events.some((event) => event.type === 'Resumed')).toBe(true);
    const hashes = events.flatMap((event) => (event.type === 'InferenceSubmitted' ? [event.inputHash] : []));
    expect(hashes.length).toBeGreaterThan(1);
    expect(hashes[1]).toBe(hashes[0]);
    expect(verifyJournalFile(journal, { rerender: journalRerender() })).toMatchObject({ ok: true });
  });

  it('harness: data set -> run -> score -> change the prompt -> compare, as docs/examples.md shows', async () => {
    const v1 = path.join(dir, 'harness-v1');
    const v2 = path.join(dir, 'harness-v2');
    for (const [plan, out] of [
      ['plan.yaml', v1],
      ['plan-v2.yaml', v2],
    ] as const) {
      expect(
        await main(
          ['fanout', path.join(repoRoot, 'examples/harness', plan), '--out', out, '--json'],
          captureIO(),
        ),
      ).toBe(0);
    }
    const score = captureIO();
    expect(await main(['score', v1], score)).toBe(0);
    expect(score.out()).toContain('verdict (jsonPath): 3/4 passed (75.0%), mean 0.75');

    // The strict grader fails every document: 1 of 4 verdicts right. The gate stops it.
    const html = path.join(dir, 'harness-compare.html');
    const compare = captureIO();
    expect(await main(['compare', v1, v2, '--gate', 'verdict', '--html', html], compare)).toBe(1);
    expect(compare.out()).toMatch(/^verdict\s+3\/4 75\.0%\s+1\/4 25\.0%\s+-50\.0 pp/m);
    expect(compare.out()).toContain(
      'gate verdict:0: FAILED (pass rate 75.0% -> 25.0%, -50.0 pp, below +0.0 pp)',
    );
    expect(readFileSync(html, 'utf8')).toContain('<section id="scorers">');
    // Compared the other way round, the change is an improvement and the gate passes.
    expect(await main(['compare', v2, v1, '--gate', 'verdict'], captureIO())).toBe(0);
  });

  describe('local-server/plan.yaml against an OpenAI-compatible server on 127.0.0.1', () => {
    let server: Server;
    const requests: { model: string; authorization: string | undefined }[] = [];
    beforeAll(async () => {
      server = createServer((req: IncomingMessage, res) => {
        let body = '';
        req.on('data', (chunk: Buffer) => {
          body += chunk.toString('utf8');
        });
        req.on('end', () => {
          const request = JSON.parse(body) as { model: string; messages: { role: string }[] };
          requests.push({ model: request.model, authorization: req.headers.authorization });
          const answered = request.messages.at(-1)?.role === 'tool';
          const message = answered
            ? { role: 'assistant', content: 'Done.' }
            : {
                role: 'assistant',
                content: null,
                tool_calls: [
                  {
                    id: `call_${requests.length}`,
                    type: 'function',
                    function: {
                      name: 'complete_task',
                      arguments: JSON.stringify({ result: { summary: 'from the local model' } }),
                    },
                  },
                ],
              };
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              id: 'chatcmpl-local',
              object: 'chat.completion',
              model: request.model,
              choices: [{ index: 0, message, finish_reason: answered ? 'stop' : 'tool_calls' }],
              usage: { prompt_tokens: 120, completion_tokens: 12, total_tokens: 132 },
            }),
          );
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('selects the openai provider from OPENAI_BASE_URL and runs every agent against it', async () => {
      const { port } = server.address() as AddressInfo;
      const out = path.join(dir, 'local');
      const run = startCli(['fanout', 'examples/local-server/plan.yaml', '--out', out], {
        cwd: repoRoot,
        env: simulatedEnv({ OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`, OPENAI_API_KEY: 'unused' }),
      });
      expect(await run.exited).toBe(0);
      expect(run.stdout()).not.toContain('simulated model');
      expect(run.stdout()).toContain('provider openai (model llama3.2)');
      const results = readResults(path.join(out, 'results.jsonl'));
      expect(results.map((line) => [line.status, line.result])).toEqual([
        ['completed', { summary: 'from the local model' }],
        ['completed', { summary: 'from the local model' }],
      ]);
      expect(requests.length).toBeGreaterThanOrEqual(2);
      for (const request of requests)
        expect(request).toEqual({ model: 'llama3.2', authorization: 'Bearer unused' });
    });
  });
});
