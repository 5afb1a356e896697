import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { MAX_BASH_TIMEOUT_SECS } from '../../src/constants.ts';
import { runTerminalCmdTool } from '../../src/tools/builtin/run-terminal-cmd.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();
const bash = (fields: { timeoutSecs?: number; outputByteLimit?: number; cmdPrefix?: string } = {}) => ({
  bash: { timeoutSecs: 30, outputByteLimit: 10_000, ...fields },
});

/** True once the process no longer runs (gone, or a zombie waiting to be reaped). */
function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

async function readPid(file: string): Promise<number> {
  const pid = Number((await readFile(file, 'utf8')).trim());
  expect(pid).toBeGreaterThan(1);
  return pid;
}

describe('run_terminal_cmd', () => {
  it('runs a bash command in the working directory and reports output and exit code', async () => {
    const cwd = await tempDir();
    const toolbox = toolboxFor(cwd, bash());
    const ok = await toolbox.call('run_terminal_cmd', { command: 'pwd; echo err >&2' });
    expect(ok).toMatchObject({ ok: true, text: `${cwd}\nerr\n[exit code 0]` });
    const failed = await toolbox.call('run_terminal_cmd', { command: 'echo nope; exit 3' });
    expect(failed).toMatchObject({ ok: false, text: 'nope\n[exit code 3]' });
    expect((await toolbox.call('run_terminal_cmd', { command: 'true' })).text).toBe(
      '(no output)\n[exit code 0]',
    );
  });

  it('prepends cmdPrefix to every command', async () => {
    const toolbox = toolboxFor(await tempDir(), bash({ cmdPrefix: 'set -e; export PREFIXED=yes;' }));
    expect((await toolbox.call('run_terminal_cmd', { command: 'echo "$PREFIXED"' })).text).toBe(
      'yes\n[exit code 0]',
    );
    // set -e from the prefix stops at the first failure.
    expect((await toolbox.call('run_terminal_cmd', { command: 'false; echo after' })).text).toBe(
      '(no output)\n[exit code 1]',
    );
  });

  it('keeps the head and tail of long output within outputByteLimit', async () => {
    const toolbox = toolboxFor(await tempDir(), bash({ outputByteLimit: 100 }));
    const result = await toolbox.call('run_terminal_cmd', {
      command: "printf 'HEAD'; head -c 5000 /dev/zero | tr '\\0' x; printf 'TAIL'",
    });
    const [head, tail] = result.text.split('\n[... 4908 bytes of output omitted ...]\n');
    expect(head).toBe(`HEAD${'x'.repeat(46)}`);
    expect(tail).toBe(`${'x'.repeat(46)}TAIL\n[exit code 0]`);
  });

  it('kills the whole process group on timeout, grandchildren included', async () => {
    const cwd = await tempDir();
    const toolbox = toolboxFor(cwd, bash({ timeoutSecs: 1 }));
    const result = await toolbox.call('run_terminal_cmd', {
      command: '(sleep 300; echo survived > survived.txt) & echo $! > grandchild.pid; wait',
    });
    expect(result.ok).toBe(false);
    expect(result.text).toContain('[The command timed out after 1s; its process group was killed]');
    const pid = await readPid(path.join(cwd, 'grandchild.pid'));
    await vi.waitFor(() => expect(isGone(pid)).toBe(true));
  });

  it('a timeoutSecs at its maximum, the longest timer delay, does not kill the command at once', async () => {
    const toolbox = toolboxFor(await tempDir(), bash({ timeoutSecs: MAX_BASH_TIMEOUT_SECS }));
    const result = await toolbox.call('run_terminal_cmd', { command: 'sleep 0.2; echo done' });
    expect(result).toMatchObject({ ok: true, text: 'done\n[exit code 0]' });
  });

  it('kills the whole process group when the call is aborted', async () => {
    const cwd = await tempDir();
    const toolbox = toolboxFor(cwd, bash());
    const controller = new AbortController();
    const pending = toolbox.call(
      'run_terminal_cmd',
      { command: 'sleep 300 & echo $! > grandchild.pid; wait' },
      { signal: controller.signal },
    );
    const pidFile = path.join(cwd, 'grandchild.pid');
    const pid = await vi.waitFor(() => readPid(pidFile), { timeout: 10_000 });
    controller.abort();
    const result = await pending;
    expect(result).toMatchObject({ ok: false });
    expect(result.text).toContain('[The command was cancelled; its process group was killed]');
    await vi.waitFor(() => expect(isGone(pid)).toBe(true));
  });

  it('returns when the command exits and stops what it left running in the background', async () => {
    const cwd = await tempDir();
    const toolbox = toolboxFor(cwd, bash());
    const result = await toolbox.call('run_terminal_cmd', {
      command: 'sleep 300 & echo $! > bg.pid; echo started',
    });
    expect(result).toMatchObject({ ok: true, text: 'started\n[exit code 0]' });
    const pid = await readPid(path.join(cwd, 'bg.pid'));
    await vi.waitFor(() => expect(isGone(pid)).toBe(true));
  });

  it('starts each call in a fresh shell in the working directory, and tells the model so', async () => {
    const cwd = await tempDir();
    const toolbox = toolboxFor(cwd, bash());
    await toolbox.call('run_terminal_cmd', { command: 'mkdir sub && cd sub && export TROUPE_PROBE=set' });
    expect(await toolbox.call('run_terminal_cmd', { command: 'pwd; echo "[$TROUPE_PROBE]"' })).toMatchObject({
      ok: true,
      text: `${cwd}\n[]\n[exit code 0]`,
    });
    expect(runTerminalCmdTool.description).toContain('`cd` and `export` do not carry over to the next call');
  });

  it('uses troupe defaults when the context carries no bash settings', async () => {
    const cwd = await tempDir();
    const outcome = await runTerminalCmdTool.execute(
      { command: 'echo default' },
      { signal: new AbortController().signal, cwd, agentId: 'a', fitsState: () => true },
    );
    expect(outcome).toEqual({ ok: true, text: 'default\n[exit code 0]' });
  });
});

describe('run_terminal_cmd on Windows', () => {
  // Run in a child that pretends to be win32: we have no Windows machine. Before, a timeout or an
  // abort sent SIGKILL to the process group -4321, which Windows does not have: bash's background
  // children outlived the call (and a dead thread's commands were not killed either).
  const fixture = fileURLToPath(new URL('../fixtures/tools/win32-bash.ts', import.meta.url));
  const taskkill = 'C:\\Windows\\System32\\taskkill.exe';
  const run = (mode: string): { calls: unknown[]; text: string } => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', fixture, mode], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(child.status, child.stderr).toBe(0);
    return JSON.parse(child.stdout) as { calls: unknown[]; text: string };
  };

  it.each(['abort', 'timeout'])('on %s ends bash with its whole process tree (taskkill /T /F)', (mode) => {
    const { calls, text } = run(mode);
    expect(calls).toEqual([
      { command: 'bash', args: ['-c', 'server & sleep 100'], windowsHide: true },
      { command: taskkill, args: ['/pid', '4321', '/T', '/F'], windowsHide: true },
    ]);
    expect(text).toContain('started');
    expect(text).toContain(mode === 'abort' ? 'cancelled' : 'timed out');
    expect(text).toContain('its process tree was killed');
  });

  it('ends the process tree of a command a dead thread left behind', () => {
    expect(run('orphan').calls).toEqual([
      { command: taskkill, args: ['/pid', '4321', '/T', '/F'], windowsHide: true },
    ]);
  });
});
