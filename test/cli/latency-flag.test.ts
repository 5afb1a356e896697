/**
 * `--latency-ms` of `troupe run` and `troupe chat`: the simulated model's delay before each answer
 * (a fan-out plan's `providerOptions.latency`), so that Ctrl-C in the middle of a turn can be tried
 * without a real model; refused for any other provider, whose latency is its own.
 */
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chat, TURN_CANCELLED_LINE, WAITING_LINE } from '../../src/cli/chat.ts';
import { main } from '../../src/cli/main.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';
import { fakeTerminal, journalEvents, Project, savedEnv } from '../fixtures/cli/cli-helpers.ts';
import { captureIO } from '../run-dir/helpers.ts';

let project: Project;
const restoreEnv = savedEnv(['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY']);

beforeEach(() => {
  project = new Project({ 'a.md': 'alpha\n' });
});

afterEach(() => {
  project.remove();
  restoreEnv();
});

describe('--latency-ms', () => {
  it('holds each simulated turn, so Ctrl-C in troupe chat cancels it mid-turn', async () => {
    const input = fakeTerminal();
    let output = '';
    const io: CliIO = {
      stdout: (text) => {
        output += text;
      },
      stderr: (text) => {
        output += text;
      },
    };
    const journal = project.path('chat.jsonl');
    input.write('read a.md\n');
    const running = chat(
      'reader',
      { provider: 'simulated', latencyMs: 600_000, journal, cwd: project.root },
      io,
      {
        input,
        output: new PassThrough(),
      },
    );
    // Ctrl-C once the request is out (the turn is then held by the latency), and again at the prompt.
    let pressed = 0;
    const keys = setInterval(() => {
      if (pressed === 0 && output.includes(WAITING_LINE)) {
        pressed = 1;
        input.write('\u0003');
      } else if (pressed === 1 && output.includes(TURN_CANCELLED_LINE)) {
        pressed = 2;
        input.write('\u0003');
      }
    }, 5);
    const code = await running;
    clearInterval(keys);
    expect(code, output).toBe(0);
    const events = journalEvents(journal);
    expect(events.find((event) => event.type === 'TurnCancelled')).toMatchObject({
      turn: 0,
      reason: 'interrupted by the user (Ctrl-C)',
    });
    expect(events.some((event) => event.type === 'TurnAnswered')).toBe(false);
    // The request itself was cancelled: the model had not answered (no tool was called).
    expect(events.find((event) => event.type === 'ProviderReceipt')).toMatchObject({
      errorCode: 'cancelled',
    });
    expect(events.some((event) => event.type === 'ToolCall')).toBe(false);
    expect(output).not.toContain(`reader> `);
  });

  it('gives troupe run a simulated model whose requests take that long', async () => {
    // A latency past the request limit fails the request `timeout`: without it, it answers at once.
    const io = captureIO();
    const journal = project.path('run.jsonl');
    const code = await main(
      [
        'run',
        'reader',
        '--task',
        'read a.md',
        '--provider',
        'simulated',
        '--latency-ms',
        '600000',
        '--request-timeout-ms',
        '1',
        '--journal',
        journal,
        '--cwd',
        project.root,
      ],
      io,
    );
    expect(code, io.err()).toBe(1);
    const events = journalEvents(journal);
    expect(events.find((event) => event.type === 'ProviderReceipt')).toMatchObject({ errorCode: 'timeout' });
    expect(events.at(-1)).toMatchObject({ type: 'Failed', reason: 'provider_error' });
  });

  it('is listed by the --help of troupe run and troupe chat', async () => {
    for (const command of ['run', 'chat']) {
      const io = captureIO();
      await main([command, '--help'], io);
      expect(io.out(), command).toContain('--latency-ms <ms>');
    }
  });

  it('is refused for a provider other than the simulated model, before anything runs', async () => {
    const io = captureIO();
    const journal = project.path('run.jsonl');
    const code = await main(
      [
        'run',
        'reader',
        '--task',
        'read a.md',
        '--provider',
        'openai',
        '--latency-ms',
        '500',
        '--journal',
        journal,
        '--cwd',
        project.root,
      ],
      io,
    );
    expect(code).toBe(1);
    expect(io.err()).toContain(
      'Expected --latency-ms only with the simulated model (it delays its canned answers), but the provider is openai',
    );
    expect(io.out()).not.toContain('provider: openai');
  });

  it('refuses a value that is not milliseconds', async () => {
    const io = captureIO();
    const code = await main(['chat', 'reader', '--latency-ms', '1.5', '--cwd', project.root], io);
    expect(code).toBe(1);
    expect(io.err()).toContain('Expected a non-negative integer (milliseconds) up to 2147483647');
  });
});
