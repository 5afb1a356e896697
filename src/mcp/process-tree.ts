/**
 * Ending a stdio server with everything it started, on Windows. There a server whose `command` is
 * a `.cmd` shim (`npx`, `uvx`) runs under `cmd.exe` (cross-spawn), and a signal (`child.kill`,
 * `process.kill`) ends only the process it names: `cmd.exe`, not the node or python below it, which
 * lives on when it does not exit at the end of its stdin. `taskkill /T` ends the whole tree.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { MCP_TASKKILL_TIMEOUT_MS } from './constants.ts';

/** `taskkill.exe` of the system (not one found on a PATH), else by its name. */
function taskkill(): string {
  const root = process.env.SystemRoot;
  return root ? path.win32.join(root, 'System32', 'taskkill.exe') : 'taskkill.exe';
}

/**
 * Windows only: `taskkill /pid PID /T`, with `/F` when `force` (without it, a process is asked to
 * close; with it, it is terminated), spawned without a shell. Resolves when taskkill exits, or
 * after `timeoutMs` (it is then killed); never rejects: a tree already gone, or a taskkill that
 * cannot start, is not an error of the caller's close.
 */
export function killProcessTree(
  pid: number,
  force: boolean,
  timeoutMs: number = MCP_TASKKILL_TIMEOUT_MS,
): Promise<void> {
  return new Promise<void>((resolve) => {
    const args = ['/pid', String(pid), '/T', ...(force ? ['/F'] : [])];
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(taskkill(), args, { stdio: 'ignore', shell: false, windowsHide: true });
    } catch {
      resolve();
      return;
    }
    const timer = setTimeout(() => {
      child.kill();
      resolve();
    }, timeoutMs);
    timer.unref();
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    child.once('error', done);
    child.once('exit', done);
  });
}
