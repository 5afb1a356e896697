/**
 * Ctrl-C in `troupe chat` while a turn runs (docs/cli-run.md): it cancels the turn and ends the
 * chat Failed(cancelled), exit 1, and the message says so and how to start a new chat, rather
 * than a bare provider error.
 */
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chat } from '../../src/cli/chat.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';
import { fakeTerminal, journalEvents, Project, savedEnv } from '../fixtures/cli/cli-helpers.ts';
import { startMockServer } from '../supervisor/mock-openai.ts';

let project: Project;
const restoreEnv = savedEnv(['OPENAI_BASE_URL', 'OPENAI_API_KEY']);

beforeEach(() => {
  project = new Project();
});

afterEach(() => {
  project.remove();
  restoreEnv();
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
