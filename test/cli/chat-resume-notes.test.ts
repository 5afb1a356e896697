/**
 * What `troupe chat` says besides the answers (docs/cli-run.md): `--resume` notes what
 * `troupe resume` notes (a torn last line cut), a turn shows a line at a terminal as each request
 * goes to the model, so a stalled model is not silent, and `--resume` of a task run that has
 * already ended says there is nothing to continue.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chat, WAITING_LINE } from '../../src/cli/chat.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';
import { Project, runCli } from '../fixtures/cli/cli-helpers.ts';

let project: Project;

beforeEach(() => {
  project = new Project({ 'a.md': 'alpha\n' });
});

afterEach(() => {
  project.remove();
});

function capture(): { io: CliIO; text: () => string } {
  let out = '';
  const add = (text: string): void => {
    out += text;
  };
  return { io: { stdout: add, stderr: add }, text: () => out };
}

describe('troupe chat notes', () => {
  it('--resume says that a torn last line was cut', async () => {
    const journal = project.path('chat.jsonl');
    const first = capture();
    const flags = { provider: 'simulated', journal, cwd: project.root };
    expect(
      await chat('reader', flags, first.io, { input: Readable.from(['hello\n']), output: new PassThrough() }),
    ).toBe(0);
    // Cut the chat at its answer (as if killed then), and leave half a line after it.
    const lines = readFileSync(journal, 'utf8').split('\n');
    const answered = lines.findLastIndex((line) => line.includes('"type":"TurnAnswered"'));
    writeFileSync(journal, `${lines.slice(0, answered + 1).join('\n')}\n`);
    appendFileSync(journal, '{"seq":99,"type":"Wai');

    const again = capture();
    const code = await chat(undefined, { resume: journal, cwd: project.root }, again.io, {
      input: Readable.from([]),
      output: new PassThrough(),
    });
    expect(code).toBe(0);
    expect(again.text()).toContain('cut a torn last line of 21 bytes left by a crash');
  });

  it('at a terminal, shows a line as each request goes to the model', async () => {
    const input = new PassThrough() as PassThrough & { isTTY?: boolean; setRawMode?: () => void };
    input.isTTY = true;
    input.setRawMode = () => {};
    const out = capture();
    const io: CliIO = {
      stdout: (text) => {
        out.io.stdout(text);
        if (text.startsWith('reader> ')) setImmediate(() => input.end());
      },
      stderr: out.io.stderr,
    };
    input.write('hello\n');
    const journal = project.path('tty.jsonl');
    const code = await chat('reader', { provider: 'simulated', journal, cwd: project.root }, io, {
      input,
      output: new PassThrough(),
    });
    expect(code).toBe(0);
    const text = out.text();
    expect(text).toContain(`  ${WAITING_LINE}\n`);
    expect(text.indexOf(WAITING_LINE)).toBeLessThan(text.indexOf('reader> '));
  });

  it('--resume of a task run that has ended says there is nothing to continue', async () => {
    const journal = project.path('run.jsonl');
    const run = await runCli(
      'run',
      'reader',
      '--task',
      'Read a.md',
      '--provider',
      'simulated',
      '--journal',
      journal,
      '--cwd',
      project.root,
    );
    expect(run.code, run.stderr).toBe(0);
    const { code, stderr } = await runCli('chat', '--resume', journal);
    expect(code).toBe(1);
    expect(stderr).toContain('holds a task run that has already ended: there is nothing to continue');
    expect(stderr).not.toContain('troupe resume');
  });
});
