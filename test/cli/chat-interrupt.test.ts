/**
 * Ctrl-C in `troupe chat` while a turn runs (docs/cli-run.md): it cancels the turn and ends the
 * chat Failed(cancelled), exit 1, and the message says so and how to start a new chat, rather
 * than a bare provider error.
 */
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chat } from '../../src/cli/chat.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';
import { journalEvents, Project } from '../fixtures/cli/cli-helpers.ts';
import { startMockServer } from '../supervisor/mock-openai.ts';

/** A fake terminal: readline treats it as one, so `\u0003` is Ctrl-C. */
function fakeTerminal(): PassThrough {
  const input = new PassThrough() as PassThrough & { isTTY?: boolean; setRawMode?: (mode: boolean) => void };
  input.isTTY = true;
  input.setRawMode = () => {};
  return input;
}

let project: Project;
const saved = { base: process.env.OPENAI_BASE_URL, key: process.env.OPENAI_API_KEY };

beforeEach(() => {
  project = new Project();
});

afterEach(() => {
  project.remove();
  for (const [name, value] of [
    ['OPENAI_BASE_URL', saved.base],
    ['OPENAI_API_KEY', saved.key],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe('Ctrl-C in troupe chat', () => {
  it('while a turn runs: ends the chat Failed(cancelled) and says how to start again', async () => {
    const input = fakeTerminal();
    // A model that starts its answer and never finishes it: Ctrl-C is pressed once it is asked.
    const server = await startMockServer({
      '/v1/chat/completions': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(
          `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'mock', choices: [{ index: 0, delta: { content: 'thinking' }, finish_reason: null }] })}\n\n`,
        );
        setImmediate(() => input.write('\u0003'));
      },
    });
    try {
      process.env.OPENAI_BASE_URL = server.url('/v1');
      delete process.env.OPENAI_API_KEY;
      let stderr = '';
      const io: CliIO = {
        stdout: () => {},
        stderr: (text) => {
          stderr += text;
        },
      };
      const journal = project.path('chat.jsonl');
      input.write('think forever\n');
      const code = await chat('general-purpose', { provider: 'openai', journal, cwd: project.root }, io, {
        input,
        output: new PassThrough(),
      });
      expect(code).toBe(1);
      expect(journalEvents(journal).at(-1)).toMatchObject({ type: 'Failed', reason: 'cancelled' });
      expect(stderr).toContain('Ctrl-C cancelled the turn in flight and ended the chat (Failed: cancelled)');
      expect(stderr).toContain('start a new chat with `troupe chat general-purpose`');
    } finally {
      await server.close();
    }
  });
});
