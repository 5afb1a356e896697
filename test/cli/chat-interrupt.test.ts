/**
 * Ctrl-C in `troupe chat` while a turn runs (docs/cli-run.md): the first cancels that turn alone
 * (its request aborted, TurnCancelled journalled, a note in the history) and the chat goes on with
 * the next message; a second one before the cancelled turn has stopped ends the chat
 * Failed(cancelled), exit 1, with a message that says how to start again.
 */
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chat, TURN_CANCELLED_LINE } from '../../src/cli/chat.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import { TURN_CANCELLED_NOTE } from '../../src/loop/session.ts';
import { fakeTerminal, journalEvents, Project, savedEnv } from '../fixtures/cli/cli-helpers.ts';
import { startMockServer, streamChunk, streamText } from '../supervisor/mock-openai.ts';

let project: Project;
const restoreEnv = savedEnv(['OPENAI_BASE_URL', 'OPENAI_API_KEY']);

beforeEach(() => {
  project = new Project();
});

afterEach(() => {
  project.remove();
  restoreEnv();
});

function capture(): { io: CliIO; out: () => string; err: () => string } {
  let stdout = '';
  let stderr = '';
  return {
    io: {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
    },
    out: () => stdout,
    err: () => stderr,
  };
}

describe('Ctrl-C in troupe chat', () => {
  it('while a turn runs: cancels that turn, and the chat answers the next message', async () => {
    const input = fakeTerminal();
    // The first request starts an answer and never finishes it: Ctrl-C is pressed once it is
    // asked. The second is answered, and the person then ends the chat.
    const server = await startMockServer({
      '/v1/chat/completions': (_req, res, index) => {
        if (index === 0) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(streamChunk({ content: 'thinking' }));
          setImmediate(() => input.write('\u0003'));
          return;
        }
        streamText(res, 'the second answer');
        setImmediate(() => input.end());
      },
    });
    try {
      process.env.OPENAI_BASE_URL = server.url('/v1');
      delete process.env.OPENAI_API_KEY;
      const { io, out, err } = capture();
      const journal = project.path('chat.jsonl');
      input.write('think forever\n');
      const running = chat('general-purpose', { provider: 'openai', journal, cwd: project.root }, io, {
        input,
        output: new PassThrough(),
      });
      // The next message, typed once the first turn was cancelled.
      const typeNext = setInterval(() => {
        if (!out().includes(TURN_CANCELLED_LINE)) return;
        clearInterval(typeNext);
        input.write('and now?\n');
      }, 5);
      const code = await running;
      clearInterval(typeNext);
      expect(err()).toBe('');
      expect(code).toBe(0);
      expect(out()).toContain('general-purpose> the second answer');
      // The first request's stream was aborted, not left running.
      expect(server.closed).toHaveLength(1);
      const events = journalEvents(journal);
      const types = events.map((event) => event.type);
      expect(events.find((event) => event.type === 'TurnCancelled')).toMatchObject({
        turn: 0,
        reason: 'interrupted by the user (Ctrl-C)',
      });
      expect(events.find((event) => event.type === 'TurnAnswered')).toMatchObject({
        turn: 1,
        answer: 'the second answer',
      });
      expect(types.indexOf('TurnCancelled')).toBeLessThan(types.indexOf('TurnAnswered'));
      // The model is told its last turn was cut off: the note is in the history the second
      // request rendered.
      expect(events).toContainEqual(
        expect.objectContaining({ type: 'HistoryAppended', kind: 'note', text: TURN_CANCELLED_NOTE }),
      );
      expect(events.at(-1)).toMatchObject({ type: 'Completed', answer: 'the second answer' });
      // Both requests re-render from the journal to the inputs they were sent with.
      expect(verifyJournalFile(journal, { rerender: journalRerender() })).toMatchObject({
        ok: true,
        checkedInferences: 2,
      });
    } finally {
      await server.close();
    }
  });

  it('twice before the turn stops: ends the chat Failed(cancelled) and says how to start again', async () => {
    const input = fakeTerminal();
    // A model that starts its answer and never finishes it, nor heeds the abort quickly: both
    // Ctrl-Cs are pressed at once.
    const server = await startMockServer({
      '/v1/chat/completions': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(streamChunk({ content: 'thinking' }));
        setImmediate(() => input.write('\u0003\u0003'));
      },
    });
    try {
      process.env.OPENAI_BASE_URL = server.url('/v1');
      delete process.env.OPENAI_API_KEY;
      const { io, err } = capture();
      const journal = project.path('chat.jsonl');
      input.write('think forever\n');
      const code = await chat('general-purpose', { provider: 'openai', journal, cwd: project.root }, io, {
        input,
        output: new PassThrough(),
      });
      expect(code).toBe(130);
      expect(journalEvents(journal).at(-1)).toMatchObject({ type: 'Failed', reason: 'cancelled' });
      expect(err()).toContain('Ctrl-C ended the chat in the middle of a turn (Failed: cancelled)');
      expect(err()).toContain('start a new chat with `troupe chat general-purpose`');
    } finally {
      await server.close();
    }
  });
});
