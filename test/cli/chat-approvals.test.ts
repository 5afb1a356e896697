/**
 * Approvals in `troupe chat` (docs/permissions.md): a call that asks waits for the person at the
 * terminal, whose next typed line answers it (`y`, `n`, `a`; anything else asks again) and is not
 * a message; off a terminal it is denied as `troupe run` denies it; `--allow` rules reach the
 * agent; every decision is shown. The model is a scripted OpenAI-compatible server that calls
 * `run_terminal_cmd`, which the built-in `general-purpose` (mode `default`) asks before running.
 */
import { existsSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chat } from '../../src/cli/chat.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';
import type { PermissionFlags } from '../../src/cli/shared/permission-flags.ts';
import type { AuditEvent, EventOf } from '../../src/journal/events.ts';
import { fakeTerminal, journalEvents, Project, savedEnv } from '../fixtures/cli/cli-helpers.ts';
import { startMockServer, streamText, streamToolCall } from '../supervisor/mock-openai.ts';

type MockServer = Awaited<ReturnType<typeof startMockServer>>;

function ofType<T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T): EventOf<T>[] {
  return events.filter((event): event is EventOf<T> => event.type === type);
}

/** A model that answers each message by running `command` (`echo ran > proof.txt`), then says `done`. */
function shellModel(command = 'echo ran > proof.txt'): Promise<MockServer> {
  return startMockServer({
    // The first request calls the tool; the one after its result answers.
    '/v1/chat/completions': (_req, res, index) => {
      if (index === 0) {
        streamToolCall(res, 'call_1', 'run_terminal_cmd', JSON.stringify({ command }));
      } else streamText(res, 'done');
    },
  });
}

let project: Project;
let server: MockServer;
const restoreEnv = savedEnv(['OPENAI_BASE_URL', 'OPENAI_API_KEY']);

beforeEach(async () => {
  project = new Project();
  server = await shellModel();
  process.env.OPENAI_BASE_URL = server.url('/v1');
  delete process.env.OPENAI_API_KEY;
});

afterEach(async () => {
  await server.close();
  project.remove();
  restoreEnv();
});

/**
 * Chats one message, typing `answers` one per approval prompt shown (a prompt shown again after
 * an answer that is not y/n/a takes the next), and ends the input once the agent answered.
 */
async function chatOnce(options: {
  tty: boolean;
  answers?: readonly string[];
  flags?: PermissionFlags;
}): Promise<{ code: number; stdout: string; events: AuditEvent[]; ran: boolean; prompts: string[] }> {
  const prompts: string[] = [];
  const input = fakeTerminal(options.tty);
  const output = new PassThrough();
  const answers = [...(options.answers ?? [])];
  let prompted = 0;
  output.on('data', (data: Buffer) => {
    // The approval prompt readline shows: each one takes the next answer.
    const shown = data.toString('utf8').match(/approve\? \[y\/n(?:\/a)?\] /g) ?? [];
    for (const prompt of shown) {
      prompts.push(prompt);
      prompted += 1;
      const answer = answers.shift();
      if (answer !== undefined) setImmediate(() => input.write(`${answer}\n`));
    }
  });
  let stdout = '';
  const io: CliIO = {
    stdout: (text) => {
      stdout += text;
      if (text.startsWith('general-purpose> ')) setImmediate(() => input.end());
    },
    stderr: (text) => {
      stdout += text;
    },
  };
  const journal = project.path('chat.jsonl');
  input.write('run it\n');
  const code = await chat(
    'general-purpose',
    { provider: 'openai', journal, cwd: project.root, ...options.flags },
    io,
    { input, output },
  );
  expect(prompted).toBe(options.answers?.length ?? 0);
  return {
    code,
    stdout,
    events: journalEvents(journal),
    ran: existsSync(project.path('proof.txt')),
    prompts,
  };
}

describe('troupe chat and a call that asks for approval', () => {
  it('at a terminal: shows the request, asks again after an unknown answer, and y runs the call', async () => {
    const { code, stdout, events, ran } = await chatOnce({ tty: true, answers: ['maybe', 'y'] });
    expect(code).toBe(0);
    expect(stdout).toContain('approval needed: run_terminal_cmd {"command":"echo ran > proof.txt"}');
    expect(stdout).toContain('  approved: run_terminal_cmd by a person (tty)');
    expect(ran).toBe(true);
    expect(ofType(events, 'ApprovalDecided')).toMatchObject([{ approved: true, by: 'person' }]);
    // The answers were not messages.
    expect(ofType(events, 'Instructed').map((event) => event.text)).toEqual(['run it']);
    expect(stdout).toContain('general-purpose> done');
  });

  it('at a terminal: a call holding a masked secret is asked [y/n], and a approves that call only', async () => {
    await server.close();
    server = await shellModel(`echo ghp_${'Kx7Qm2Wv9Zr4Tn6Yb1Lp3Hs8'} > proof.txt`);
    process.env.OPENAI_BASE_URL = server.url('/v1');
    const { code, events, ran, prompts } = await chatOnce({ tty: true, answers: ['a'] });
    expect(code).toBe(0);
    expect(prompts).toEqual(['approve? [y/n] ']);
    expect(ran).toBe(true);
    expect(ofType(events, 'ApprovalDecided')).toMatchObject([{ approved: true, remember: 'call' }]);
  });

  it('at a terminal: n denies the call, and the chat says so', async () => {
    const { code, stdout, events, ran } = await chatOnce({ tty: true, answers: ['n'] });
    expect(code).toBe(0);
    expect(ran).toBe(false);
    expect(stdout).toContain('  denied: run_terminal_cmd by a person (tty): denied at the terminal');
    expect(ofType(events, 'ApprovalDecided')).toMatchObject([{ approved: false, by: 'person' }]);
    expect(ofType(events, 'Instructed')).toHaveLength(1);
  });

  it('off a terminal: the call is denied as troupe run denies it, and the chat says so', async () => {
    const { code, stdout, ran } = await chatOnce({ tty: false });
    expect(code).toBe(0);
    expect(ran).toBe(false);
    expect(stdout).toContain('  denied: run_terminal_cmd by rule (no terminal)');
  });

  it('an --approve rule approves the request without asking', async () => {
    const { stdout, ran } = await chatOnce({ tty: true, flags: { approve: ['run_terminal_cmd'] } });
    expect(ran).toBe(true);
    expect(stdout).toContain('  approved: run_terminal_cmd by rule (--approve run_terminal_cmd)');
  });

  it('an --allow rule lets the call run without a request', async () => {
    const { events, ran } = await chatOnce({ tty: false, flags: { allow: ['run_terminal_cmd'] } });
    expect(ran).toBe(true);
    expect(ofType(events, 'ApprovalRequested')).toHaveLength(0);
  });
});
