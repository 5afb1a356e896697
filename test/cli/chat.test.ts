/**
 * `troupe chat` through a pseudo-terminal (util-linux `script` gives the child a real TTY): each
 * typed line is answered by one turn of the same session, Ctrl-D ends it, the conversation is
 * journalled and `--resume` continues it with its history.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEvent, EventOf } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { verifyJournalContents } from '../../src/journal/verify.ts';
import { Project, runCli, troupeBin } from '../fixtures/cli/cli-helpers.ts';

const hasScript = process.platform === 'linux' && spawnSync('script', ['--version']).status === 0;

/** A command run under `script`, so that it reads from and writes to a pseudo-terminal. */
class Terminal {
  readonly child: ChildProcess;
  output = '';
  readonly exited: Promise<number | null>;
  #waiters: { test: () => boolean; resolve: () => void }[] = [];

  constructor(project: Project, args: readonly string[]) {
    const command = [process.execPath, troupeBin, ...args].map((arg) => `'${arg}'`).join(' ');
    this.child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: project.root,
      env: { ...project.env(), TERM: 'dumb' },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stdout?.setEncoding('utf8');
    this.child.stdout?.on('data', (chunk: string) => {
      this.output += chunk;
      this.#waiters = this.#waiters.filter((waiter) => {
        if (!waiter.test()) return true;
        waiter.resolve();
        return false;
      });
    });
    this.exited = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  /** Resolves once the output holds `text` `times` times; rejects if the process ends first. */
  until(text: string, times = 1): Promise<void> {
    const test = () => this.output.split(text).length - 1 >= times;
    if (test()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.#waiters.push({ test, resolve });
      void this.exited.then(() => {
        if (!test()) reject(new Error(`ended before ${JSON.stringify(text)} x${times}:\n${this.output}`));
      });
    });
  }

  type(text: string): void {
    this.child.stdin?.write(text);
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.pid !== undefined) {
      try {
        process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}

function ofType<T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T): EventOf<T>[] {
  return events.filter((event): event is EventOf<T> => event.type === type);
}

let project: Project;
let terminals: Terminal[] = [];

beforeEach(() => {
  project = new Project({ 'a.md': 'alpha\n' });
});

afterEach(() => {
  for (const terminal of terminals) terminal.kill();
  terminals = [];
  project.remove();
});

function open(args: readonly string[]): Terminal {
  const terminal = new Terminal(project, args);
  terminals.push(terminal);
  return terminal;
}

describe.skipIf(!hasScript)('troupe chat in a terminal', () => {
  it('answers each typed line with one turn, ends on Ctrl-D, and --resume continues the conversation', async () => {
    const journal = project.path('chat.jsonl');
    const chat = open(['chat', 'reader', '--journal', journal]);
    await chat.until('you> ');
    chat.type('hello there\r');
    await chat.until('reader> ');
    await chat.until('you> ', 2);
    chat.type('and a second message\r');
    await chat.until('reader> ', 2);
    await chat.until('you> ', 3);
    chat.type('\u0004');
    expect(await chat.exited).toBe(0);
    // An ended chat cannot be continued (`chat --resume` refuses it), so the closing line does not offer it.
    expect(chat.output).toContain(`chat ended; its journal: ${journal}`);
    expect(chat.output).not.toContain('--resume');
    const ended = await runCli('chat', '--resume', journal);
    expect(ended.code).toBe(1);
    expect(ended.stderr).toContain('this chat has ended');

    const first = readJournal(journal).events;
    expect(ofType(first, 'Started')[0]).toMatchObject({
      session: true,
      metadata: { command: 'troupe chat' },
    });
    expect(ofType(first, 'Instructed').map((event) => event.text)).toEqual([
      'hello there',
      'and a second message',
    ]);
    expect(ofType(first, 'TurnAnswered').map((event) => event.turn)).toEqual([0, 1]);
    // Each answer the terminal showed is the one journalled.
    for (const answer of ofType(first, 'TurnAnswered'))
      expect(chat.output).toContain(answer.answer.slice(0, 40));
    expect(ofType(first, 'Completed')).toHaveLength(1);

    // The chat ended Completed: --resume continues a chat cut off, so cut this one at its last answer.
    const text = readFileSync(journal, 'utf8');
    const lines = text.split('\n');
    const last = lines.findLastIndex((line) => line.includes('"type":"TurnAnswered"'));
    writeFileSync(journal, `${lines.slice(0, last + 1).join('\n')}\n`);

    // `troupe resume` leaves a chat alone: it has no one to talk to.
    const { code, stderr } = await runCli('resume', journal);
    expect(code).toBe(1);
    expect(stderr).toContain('session_journal');
    expect(readFileSync(journal, 'utf8')).toBe(`${lines.slice(0, last + 1).join('\n')}\n`);

    const again = open(['chat', '--resume', journal]);
    // It shows its last answer again, then waits for the next message.
    await again.until('reader> ');
    await again.until('you> ');
    again.type('third\r');
    await again.until('reader> ', 2);
    await again.until('you> ', 2);
    again.type('/exit\r');
    expect(await again.exited).toBe(0);

    const resumed = readJournal(journal);
    expect(verifyJournalContents(resumed).ok).toBe(true);
    expect(ofType(resumed.events, 'Instructed').map((event) => event.text)).toEqual([
      'hello there',
      'and a second message',
      'third',
    ]);
    const users = ofType(resumed.events, 'HistoryAppended').filter((event) => event.kind === 'user');
    expect(users.map((event) => event.text)).toEqual([
      'User: hello there',
      'User: and a second message',
      'User: third',
    ]);
    expect(ofType(resumed.events, 'TurnAnswered').map((event) => event.turn)).toEqual([0, 1, 2]);
  });
});
