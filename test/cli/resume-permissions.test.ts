/**
 * Permission flags across `troupe resume JOURNAL` (docs/cli-run.md): the rules and mode the command
 * line started an agent with are recorded in its Started metadata and a resumed agent keeps them,
 * and `troupe resume` takes the same flags to add to them. The model is a scripted
 * OpenAI-compatible server that calls `run_terminal_cmd` (which `general-purpose`, in mode
 * `default`, asks before running; off a terminal a request is denied) and then answers.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { journalEvents, Project, runCli, savedEnv } from '../fixtures/cli/cli-helpers.ts';
import { startMockServer, streamText, streamToolCall } from '../supervisor/mock-openai.ts';

let project: Project;
let server: Awaited<ReturnType<typeof startMockServer>>;
const restoreEnv = savedEnv(['OPENAI_BASE_URL', 'OPENAI_API_KEY']);

beforeEach(async () => {
  project = new Project();
  // Each task is one call of run_terminal_cmd (even requests), then an answer (odd ones).
  server = await startMockServer({
    '/v1/chat/completions': (_req, res, index) => {
      if (index % 2 === 0) {
        const args = JSON.stringify({ command: 'echo ran >> proof.txt' });
        streamToolCall(res, `call_${index}`, 'run_terminal_cmd', args);
      } else streamText(res, 'done');
    },
  });
  process.env.OPENAI_BASE_URL = server.url('/v1');
  delete process.env.OPENAI_API_KEY;
});

afterEach(async () => {
  await server.close();
  project.remove();
  restoreEnv();
});

/** Cuts the journal back to its Started event: the agent was killed before its first request. */
function cutAfterStarted(journal: string): void {
  const lines = readFileSync(journal, 'utf8').split('\n');
  const started = lines.findIndex((line) => line.includes('"type":"Started"'));
  writeFileSync(journal, `${lines.slice(0, started + 1).join('\n')}\n`);
}

/** How many times the command ran. */
function runs(): number {
  const proof = project.path('proof.txt');
  return existsSync(proof) ? readFileSync(proof, 'utf8').split('\n').filter(Boolean).length : 0;
}

function runArgs(journal: string): string[] {
  return [
    'run',
    'general-purpose',
    '--task',
    'Run it',
    '--provider',
    'openai',
    '--journal',
    journal,
    '--cwd',
    project.root,
  ];
}

describe('troupe resume and the permission flags of the run', () => {
  it('a resumed agent keeps the --allow rule its run started with', async () => {
    const journal = project.path('allowed.jsonl');
    const first = await runCli(...runArgs(journal), '--allow', 'run_terminal_cmd');
    expect(first.code, first.stderr).toBe(0);
    expect(runs()).toBe(1);
    cutAfterStarted(journal);

    const resumed = await runCli('resume', journal);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(runs()).toBe(2);
    expect(journalEvents(journal).filter((event) => event.type === 'ApprovalRequested')).toHaveLength(0);
  });

  it('troupe resume --allow adds a rule the run did not have', async () => {
    const journal = project.path('added.jsonl');
    const first = await runCli(...runArgs(journal));
    expect(first.code, first.stderr).toBe(0);
    // Off a terminal, the call asked and was denied.
    expect(first.stderr).toContain('denied: run_terminal_cmd by rule (no terminal)');
    expect(runs()).toBe(0);
    cutAfterStarted(journal);

    const resumed = await runCli('resume', journal, '--allow', 'run_terminal_cmd');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(runs()).toBe(1);
  });
});
