/**
 * Ctrl-Z while an approval request holds the terminal in raw mode, on a real terminal: a tmux pane
 * running an interactive bash with job control. Raw mode turns Ctrl-Z into a byte, which the
 * prompt used to swallow; it must stop troupe as the key does anywhere else, and after `fg` the
 * prompt must take keys again without Enter.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { repoRoot, simulatedEnv, tempDir, troupeBin } from '../run-dir/helpers.ts';

const fixtures = path.join(repoRoot, 'test/fixtures/approvals');
const hasTmux = process.platform !== 'win32' && spawnSync('tmux', ['-V'], { stdio: 'ignore' }).status === 0;

let dir: string;
let cleanup: () => void;
let socket: string;

/** tmux on this test's own server (its socket in the temporary directory), never the user's. */
function tmux(...args: string[]): string {
  const done = spawnSync('tmux', ['-S', socket, ...args], {
    encoding: 'utf8',
    env: simulatedEnv({ TERM: 'xterm' }),
  });
  if (done.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${done.stderr}`);
  return done.stdout;
}

const screen = (): string => tmux('capture-pane', '-p', '-J', '-S', '-200', '-t', 'job');

/** Polls `check` until it holds (a bound against a hang, not a timing check). */
async function until<T>(what: string, check: () => T | undefined | false): Promise<T> {
  for (let tries = 0; tries < 1200; tries += 1) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`never saw ${what}; the screen:\n${screen()}`);
}

/** The `ps` state letters of the shell's children (troupe, once started). */
function childStates(): string[] {
  const shell = tmux('display-message', '-p', '-t', 'job', '#{pane_pid}').trim();
  const listed = spawnSync('ps', ['-o', 'stat=', '--ppid', shell], { encoding: 'utf8' }).stdout ?? '';
  return listed
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-cli-job-control-'));
  socket = path.join(dir, 'tmux.sock');
  mkdirSync(path.join(dir, '.claude', 'agents'), { recursive: true });
  writeFileSync(
    path.join(dir, '.claude', 'agents', 'asker.md'),
    '---\nname: asker\ndescription: Follows the plan in its task.\n---\nFollow the plan.\n',
  );
  const steps = [{ name: 'record_action', args: { note: 'first' } }];
  writeFileSync(
    path.join(dir, 'plan.yaml'),
    [
      'threads: 1',
      'provider:',
      `  module: ${path.join(fixtures, 'plan-provider.ts')}`,
      'toolModules:',
      `  - ${path.join(fixtures, 'tools.ts')}`,
      'runs:',
      `  - { agent: asker, task: ${JSON.stringify(`Go. PLAN:${JSON.stringify(steps)}`)} }`,
    ].join('\n'),
  );
});
afterEach(() => {
  if (hasTmux) spawnSync('tmux', ['-S', socket, 'kill-server'], { stdio: 'ignore' });
  cleanup();
});

describe('Ctrl-Z at an approval prompt on a real terminal', () => {
  it.skipIf(!hasTmux)(
    'stops troupe with the terminal given back; after fg the prompt is shown again and answers a key',
    async () => {
      tmux('new-session', '-d', '-s', 'job', '-x', '200', '-y', '50', 'bash --norc --noprofile -i');
      const command = [
        process.execPath,
        troupeBin,
        'fanout',
        'plan.yaml',
        '--out',
        'run',
        '--ask',
        'record_action',
      ]
        .map((word) => `'${word}'`)
        .join(' ');
      tmux('send-keys', '-t', 'job', `cd '${dir}' && ${command}`, 'Enter');
      await until('the approval prompt', () => /\[y\] approve/.test(screen()));

      tmux('send-keys', '-t', 'job', 'C-z');
      await until('bash report the job stopped', () => /Stopped/.test(screen()));
      expect(childStates()[0]).toMatch(/^T/);
      // The shell has the terminal back in its own (cooked) mode: a line typed now reaches it.
      tmux('send-keys', '-t', 'job', 'echo "shell=$((40 + 2))"', 'Enter');
      await until('the shell answer', () => /shell=42/.test(screen()));

      tmux('send-keys', '-t', 'job', 'fg', 'Enter');
      await until('troupe running again', () => /^[RS]/.test(childStates()[0] ?? '') && childStates());
      // The prompt is drawn again below the shell's lines, and one key (no Enter) answers it.
      await until('the prompt again', () => {
        const text = screen();
        return text.lastIndexOf('[y] approve') > text.lastIndexOf('shell=42');
      });
      tmux('send-keys', '-t', 'job', 'y');
      await until('troupe end', () => /finished: 1 of 1 completed/.test(screen()));
      // `$?` after `fg` is the status of the job it continued.
      tmux('send-keys', '-t', 'job', 'echo "status=$?"', 'Enter');
      const status = await until('the exit status', () => /status=(\d+)/.exec(screen())?.[1]);
      expect(status, screen()).toBe('0');
      const actions = readFileSync(path.join(dir, 'actions.log'), 'utf8');
      expect(actions).toMatch(/record_action\tfirst/);
    },
  );
});
