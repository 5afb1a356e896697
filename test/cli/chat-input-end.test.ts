/**
 * `troupe chat` reading its messages from a pipe: the input ends right after the last line, long
 * before the agent has answered any of them. The end of input ends the chat only once every line
 * before it is answered (docs/cli-run.md: "It works on a pipe too (one message per line)"), and
 * `/exit` likewise ends it after the lines before it.
 */
import { PassThrough, Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chat } from '../../src/cli/chat.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';
import type { AuditEvent, EventOf } from '../../src/journal/events.ts';
import { journalEvents, Project } from '../fixtures/cli/cli-helpers.ts';

function ofType<T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T): EventOf<T>[] {
  return events.filter((event): event is EventOf<T> => event.type === type);
}

let project: Project;

beforeEach(() => {
  project = new Project({ 'a.md': 'alpha\n' });
});

afterEach(() => {
  project.remove();
});

async function chatFromPipe(
  input: string,
  journal: string,
  agent = 'reader',
): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  const io: CliIO = {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stdout += text;
    },
  };
  const code = await chat(agent, { provider: 'simulated', journal, cwd: project.root }, io, {
    input: Readable.from([input]),
    output: new PassThrough(),
  });
  return { code, stdout };
}

describe('troupe chat on a pipe', () => {
  it('answers every line before the end of input, then ends Completed', async () => {
    const journal = project.path('pipe.jsonl');
    const { code, stdout } = await chatFromPipe('hello there\n\nand a second message\n', journal);
    expect(code).toBe(0);
    const events = journalEvents(journal);
    expect(ofType(events, 'Instructed').map((event) => event.text)).toEqual([
      'hello there',
      'and a second message',
    ]);
    expect(ofType(events, 'TurnAnswered').map((event) => event.turn)).toEqual([0, 1]);
    expect(ofType(events, 'Completed')).toHaveLength(1);
    expect(stdout.split('reader> ').length - 1).toBe(2);
  });

  it("prints the Started event's warnings as troupe run does: a tools entry that names no tool, at its line", async () => {
    const file = project.write(
      '.troupe/agents/helper.md',
      '---\nname: helper\ndescription: Helps.\ntools:\n  - Read\n  - github\n  - Agent\n---\nYou help.\n',
    );
    const { code, stdout } = await chatFromPipe('hello\n', project.path('warned.jsonl'), 'helper');
    expect(code).toBe(0);
    // Before: nothing; only the journal's Started event held the warning.
    expect(stdout).toContain(`${file}:6:5: warning unknown_tool: \`github\` in \`tools\``);
    // Before: the orchestration tool's warning said only that `troupe run` runs one agent alone.
    expect(stdout).toContain(
      `${file}:7:5: warning unknown_tool: \`Agent\` in \`tools\` is an orchestration tool, which needs a Supervisor: \`troupe run\` and \`troupe chat\` run one agent alone`,
    );
  });

  it('answers the lines before /exit and none after it', async () => {
    const journal = project.path('exit.jsonl');
    const { code } = await chatFromPipe('first\n/exit\nnot a message\n', journal);
    expect(code).toBe(0);
    const events = journalEvents(journal);
    expect(ofType(events, 'Instructed').map((event) => event.text)).toEqual(['first']);
    expect(ofType(events, 'TurnAnswered')).toHaveLength(1);
    expect(ofType(events, 'Completed')).toHaveLength(1);
  });
});

describe('troupe chat and its definition file', () => {
  it("prints the file's own warnings (read leniently, unknown keys) before the chat, as troupe run does", async () => {
    const file = project.write(
      '.claude/agents/loose.md',
      '---\nname: loose\ndescription: Reads: files\nshiny: 1\n---\nRead.\n',
    );
    let stderr = '';
    const io: CliIO = {
      stdout: () => {},
      stderr: (text) => {
        stderr += text;
      },
    };
    const journal = project.path('loose.jsonl');
    const code = await chat('loose', { provider: 'simulated', journal, cwd: project.root }, io, {
      input: Readable.from(['hello\n']),
      output: new PassThrough(),
    });
    expect(code).toBe(0);
    // Before: `troupe run` printed these; `troupe chat` said nothing of them.
    expect(stderr).toContain(`${file}:3:19: warning lenient_parse:`);
    expect(stderr).toContain(`${file}:4:1: warning unknown_key: Unknown key \`shiny\``);
  });
});
