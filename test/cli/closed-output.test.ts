/**
 * Output to a closed pipe (`troupe fanout ... --json | head -1`): the command stops its work as
 * after a first Ctrl-C, writes what it owes (the run directory's summary, the journal) and exits
 * 0 without an error. The model is a local server that answers only once stdout is closed, so the
 * CLI is certain to write to the closed pipe while its agents still run.
 */

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunSummary } from '../../src/run-dir/summary.ts';
import { spawnChild } from '../fixtures/children.ts';
import { startServer, type TestServer } from '../providers/helpers.ts';
import { readResults, simulatedEnv, tempDir, troupeBin } from '../run-dir/helpers.ts';

let dir: string;
let cleanup: () => void;
let server: TestServer;
let held: ServerResponse[];
let heldOne: () => void;
let firstRequest: Promise<void>;

beforeEach(async () => {
  ({ dir, cleanup } = tempDir('troupe-epipe-'));
  held = [];
  firstRequest = new Promise<void>((resolve) => {
    heldOne = resolve;
  });
  server = await startServer((_req, res) => {
    held.push(res);
    heldOne();
  });
});

afterEach(async () => {
  await server.close();
  cleanup();
});

/** Answers every held request with a `complete_task` call. */
function answerAll(): void {
  for (const [index, res] of held.splice(0).entries()) {
    const call = {
      id: `call_${index}`,
      type: 'function',
      function: { name: 'complete_task', arguments: JSON.stringify({ result: { done: true } }) },
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${index}`,
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: null, tool_calls: [call] },
            finish_reason: 'tool_calls',
          },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      }),
    );
  }
}

/** Starts the CLI with the local server as its model; resolves with the child once it has printed a line. */
async function startWithClosingReader(args: readonly string[]) {
  const child = spawnChild(process.execPath, [troupeBin, ...args], {
    cwd: dir,
    env: simulatedEnv({ OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: 'unused' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | string>((resolve) =>
    child.on('close', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  // Like `head -1`: read the first chunk, then close the pipe.
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  child.stdout.destroy();
  return { exited, stderr: () => stderr };
}

describe('stdout closed by its reader', () => {
  it('troupe fanout --json cancels the agents, writes summary.json and exits 0 quietly', async () => {
    writeFileSync(path.join(dir, 'plan.yaml'), 'agent: worker\nruns:\n  - task: First.\n  - task: Second.\n');
    const out = path.join(dir, 'run');
    const run = await startWithClosingReader(['fanout', 'plan.yaml', '--json', '--out', out]);
    // Its next event may hit the closed pipe before any model request is made; otherwise the
    // answer to the first request makes it write.
    await Promise.race([firstRequest, run.exited]);
    answerAll();
    expect(await run.exited, run.stderr()).toBe(0);
    expect(run.stderr()).not.toMatch(/EPIPE|Error/);
    const summary = JSON.parse(readFileSync(path.join(out, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.counts.planned).toBe(2);
    expect(readResults(path.join(out, 'results.jsonl'))).toHaveLength(2);
  });

  it('troupe run --json ends the agent, keeps its journal and exits 0 quietly', async () => {
    const journal = path.join(dir, 'run.jsonl');
    const run = await startWithClosingReader([
      'run',
      'worker',
      '--task',
      'Report.',
      '--journal',
      journal,
      '--json',
    ]);
    // Its next event may hit the closed pipe before any model request is made; otherwise the
    // answer to the first request makes it write.
    await Promise.race([firstRequest, run.exited]);
    answerAll();
    expect(await run.exited, run.stderr()).toBe(0);
    expect(run.stderr()).not.toMatch(/EPIPE|Error/);
    expect(existsSync(journal)).toBe(true);
    const last = JSON.parse(readFileSync(journal, 'utf8').trimEnd().split('\n').at(-1) ?? '{}') as {
      type: string;
    };
    expect(['Completed', 'Failed']).toContain(last.type);
  });
});
