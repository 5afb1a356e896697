/**
 * `troupe chat` shows each tool the agent calls by name. A model may call a tool that does not
 * exist, and the name is then the model's own text: it is printed like any model text, with no
 * escape sequence that could clear the screen, move the cursor or set the terminal's title
 * (docs/limits.md: "ESC, BEL, NUL, DEL, C1 and bidi overrides never reach the terminal").
 */
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chat } from '../../src/cli/chat.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';
import { journalEvents, Project, savedEnv } from '../fixtures/cli/cli-helpers.ts';
import { startMockServer, streamText, streamToolCall } from '../supervisor/mock-openai.ts';

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const HOSTILE_NAME = 'x\u001b]0;PWNED\u0007\u001b[2J\u001b[H\u009b31m';

let project: Project;
const restoreEnv = savedEnv(['OPENAI_BASE_URL', 'OPENAI_API_KEY']);

beforeEach(() => {
  project = new Project();
});

afterEach(() => {
  project.remove();
  restoreEnv();
});

describe('troupe chat and a tool name from the model', () => {
  it('prints the name without terminal control characters', async () => {
    const server = await startMockServer({
      '/v1/chat/completions': (_req, res, index) => {
        if (index === 0) streamToolCall(res, 'call_1', HOSTILE_NAME, '{}');
        else streamText(res, 'done');
      },
    });
    try {
      process.env.OPENAI_BASE_URL = server.url('/v1');
      delete process.env.OPENAI_API_KEY;
      // The input stays open until the answer is shown, as a person at a terminal would.
      const input = new PassThrough();
      let stdout = '';
      const io: CliIO = {
        stdout: (text) => {
          stdout += text;
          if (text.startsWith('reader> ')) input.end();
        },
        stderr: (text) => {
          stdout += text;
        },
      };
      const journal = project.path('chat.jsonl');
      input.write('call a tool\n');
      const code = await chat('reader', { provider: 'openai', journal, cwd: project.root }, io, {
        input,
        output: new PassThrough(),
      });
      // The call really reached the loop under the hostile name: the test would prove nothing otherwise.
      const call = journalEvents(journal).find((event) => event.type === 'ToolCall');
      expect(call?.type === 'ToolCall' && call.modelName).toBe(HOSTILE_NAME);
      expect(stdout).toContain('  · x');
      expect(CONTROL.test(stdout.replaceAll('\n', ''))).toBe(false);
      expect(code).toBe(0);
    } finally {
      await server.close();
    }
  });
});
