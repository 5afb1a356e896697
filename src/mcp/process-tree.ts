/**
 * Ending a stdio server with everything it started, on Windows. There a server whose `command` is
 * a `.cmd` shim (`npx`, `uvx`) runs under `cmd.exe` (cross-spawn), and a signal (`child.kill`,
 * `process.kill`) ends only the process it names: `cmd.exe`, not the node or python below it, which
 * lives on when it does not exit at the end of its stdin. `taskkill /T` ends the whole tree.
 *
 * `taskkill /T` finds a tree from its root's id, so once the root has exited its tree cannot be
 * found that way: the processes below it are recorded first ({@link processTree}), and those still
 * there with the same parent are ended by their own ids ({@link killRecordedTree}).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { MCP_PROCESS_LIST_MAX_BYTES, MCP_TASKKILL_TIMEOUT_MS } from './constants.ts';

/** A program of the system (`System32`, not one found on a PATH), else by its name. */
function systemProgram(...parts: string[]): string {
  const root = process.env.SystemRoot;
  return root ? path.win32.join(root, 'System32', ...parts) : (parts.at(-1) ?? '');
}

/**
 * Runs `command` without a shell; resolves with what it wrote to stdout (at most `maxBytes`) when
 * it exits, or after `timeoutMs` (it is then killed); never rejects.
 */
function run(command: string, args: readonly string[], timeoutMs: number, maxBytes = 0): Promise<string> {
  return new Promise<string>((resolve) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(command, args, {
        stdio: ['ignore', maxBytes > 0 ? 'pipe' : 'ignore', 'ignore'],
        shell: false,
        windowsHide: true,
      });
    } catch {
      resolve('');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    child.stdout?.on('data', (chunk: Buffer) => {
      const kept = chunk.subarray(0, Math.max(0, maxBytes - size));
      size += kept.length;
      if (kept.length > 0) chunks.push(kept);
    });
    const done = (): void => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const timer = setTimeout(() => {
      child.kill();
      done();
    }, timeoutMs);
    timer.unref();
    child.once('error', done);
    child.once('exit', done);
  });
}

/**
 * Windows only: `taskkill /pid PID /T`, with `/F` when `force` (without it, a process is asked to
 * close; with it, it is terminated), spawned without a shell. Resolves when taskkill exits, or
 * after `timeoutMs` (it is then killed); never rejects: a tree already gone, or a taskkill that
 * cannot start, is not an error of the caller's close.
 */
export async function killProcessTree(
  pid: number,
  force: boolean,
  timeoutMs: number = MCP_TASKKILL_TIMEOUT_MS,
): Promise<void> {
  await run(systemProgram('taskkill.exe'), ['/pid', String(pid), '/T', ...(force ? ['/F'] : [])], timeoutMs);
}

/** A process below a tree's root, with the parent it had when the tree was recorded. */
export interface TreeProcess {
  readonly pid: number;
  readonly parent: number;
}

/** Each process's id and its parent's, from one listing of every process. */
async function processList(timeoutMs: number): Promise<TreeProcess[]> {
  const text = await run(
    systemProgram('WindowsPowerShell', 'v1.0', 'powershell.exe'),
    [
      '-NoProfile',
      '-NonInteractive',
      '-Command',
      'Get-CimInstance Win32_Process | ForEach-Object { "$($_.ProcessId) $($_.ParentProcessId)" }',
    ],
    timeoutMs,
    MCP_PROCESS_LIST_MAX_BYTES,
  );
  const list: TreeProcess[] = [];
  for (const line of text.split('\n')) {
    const match = /^\s*(\d+)\s+(\d+)\s*$/.exec(line);
    if (match) list.push({ pid: Number(match[1]), parent: Number(match[2]) });
  }
  return list;
}

/**
 * Windows only: the processes below `pid` (its children, theirs, and so on), from one process
 * listing (PowerShell's `Get-CimInstance Win32_Process`, waited for at most `timeoutMs`). Empty
 * when the listing cannot be had. A parent id Windows has given again can make the listing loop:
 * each process is taken once.
 */
export async function processTree(
  pid: number,
  timeoutMs: number = MCP_TASKKILL_TIMEOUT_MS,
): Promise<TreeProcess[]> {
  const children = new Map<number, TreeProcess[]>();
  for (const entry of await processList(timeoutMs)) {
    if (entry.pid === entry.parent) continue;
    const siblings = children.get(entry.parent) ?? [];
    siblings.push(entry);
    children.set(entry.parent, siblings);
  }
  const tree: TreeProcess[] = [];
  const seen = new Set([pid]);
  for (let i = -1; i < tree.length; i++) {
    const parent = i < 0 ? pid : (tree[i]?.pid ?? pid);
    for (const child of children.get(parent) ?? []) {
      if (seen.has(child.pid)) continue;
      seen.add(child.pid);
      tree.push(child);
    }
  }
  return tree;
}

/**
 * Windows only: ends, with `taskkill /T /F`, the processes of `recorded` ({@link processTree}) that
 * a new listing still shows under the same parent; one whose parent changed has exited and its id
 * is another process's now, which is left alone (the same id under the same parent again is not
 * told apart). For a tree whose root has exited, which `taskkill /T` of the root no longer finds.
 */
export async function killRecordedTree(
  recorded: readonly TreeProcess[],
  timeoutMs: number = MCP_TASKKILL_TIMEOUT_MS,
): Promise<void> {
  if (recorded.length === 0) return;
  const now = new Map((await processList(timeoutMs)).map((entry) => [entry.pid, entry.parent]));
  const alive = recorded.filter((entry) => now.get(entry.pid) === entry.parent);
  if (alive.length === 0) return;
  await run(
    systemProgram('taskkill.exe'),
    [...alive.flatMap((entry) => ['/pid', String(entry.pid)]), '/T', '/F'],
    timeoutMs,
  );
}
