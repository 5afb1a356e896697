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

async function chatFromPipe(input: string, journal: string): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  const io: CliIO = {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stdout += text;
    },
  };
  const code = await chat('reader', { provider: 'simulated', journal, cwd: project.root }, io, {
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
