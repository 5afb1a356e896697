/** `run_terminal_cmd`: one bash command in the working directory, in its own process group. */
import { spawn } from 'node:child_process';
import { DEFAULT_BASH_OUTPUT_BYTE_LIMIT, DEFAULT_BASH_TIMEOUT_SECS } from '../../constants.ts';
import type { BashConfig } from '../../definition/types.ts';
import { killProcessTree } from '../../mcp/process-tree.ts';
import { timerDelay } from '../../option-checks.ts';
import type { Tool, ToolOutcome } from '../types.ts';

type RunTerminalCmdArgs = {
  readonly command: string;
};

const DEFAULT_BASH: BashConfig = {
  timeoutSecs: DEFAULT_BASH_TIMEOUT_SECS,
  outputByteLimit: DEFAULT_BASH_OUTPUT_BYTE_LIMIT,
};

/** Told when a command's process group starts and when it has been killed after the command ended. */
export type CommandProcessListener = (pgid: number, state: 'started' | 'exited') => void;

const listeners = new Set<CommandProcessListener>();

/**
 * Follows the process groups of this thread's commands. A thread that is terminated (a missed
 * heartbeat) cannot kill them itself, so its actor host reports them to the thread engine, which
 * kills what a dead thread leaves running. Returns the function that stops listening.
 */
export function onCommandProcess(listener: CommandProcessListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function announce(pgid: number, state: 'started' | 'exited'): void {
  for (const listener of listeners) listener(pgid, state);
}

/**
 * Runs `bash -c` with the agent's bash settings (`ctx.bash`), a fresh shell per call (`cd` and
 * `export` do not carry over, and the description tells the model so): `cmdPrefix` is prepended, output
 * (stdout and stderr interleaved) keeps its head and tail within `outputByteLimit`, and on timeout
 * or abort the whole process group is killed. Processes the command leaves running in the
 * background are killed when it exits, so nothing outlives the call.
 *
 * On Windows there are no process groups, and a signal ends only `bash.exe`: on timeout or abort
 * its process tree is ended with `taskkill /T /F` (waited for at most `MCP_TASKKILL_TIMEOUT_MS`).
 * Once bash has exited its tree can no longer be found by its id (which Windows may give to
 * another process), so what it left in the background is not killed at its exit; a call held open
 * by such a process ends at the time limit or abort, which then closes its pipes.
 */
export const runTerminalCmdTool: Tool<RunTerminalCmdArgs> = {
  name: 'run_terminal_cmd',
  description:
    'Run a bash command in the working directory and return its exit code and output (stdout and ' +
    'stderr together). The command runs non-interactively with a time limit; anything it leaves ' +
    'running in the background is stopped when it exits. Each call starts a fresh shell in the ' +
    'working directory: `cd` and `export` do not carry over to the next call, so chain them ' +
    '(`cd sub && make`).',
  parameters: {
    type: 'object',
    properties: {
      command: { type: 'string', minLength: 1, description: 'The bash command to run.' },
    },
    required: ['command'],
    additionalProperties: false,
  },
  readOnly: false,
  // Bounded by `bash.timeoutSecs`, which may be longer than the default tool time limit.
  timeoutMs: 0,
  execute(args, ctx) {
    const bash = ctx.bash ?? DEFAULT_BASH;
    const script = bash.cmdPrefix ? `${bash.cmdPrefix} ${args.command}` : args.command;
    return runInProcessGroup(script, ctx.cwd, bash, ctx.signal);
  },
};

function runInProcessGroup(
  script: string,
  cwd: string,
  bash: BashConfig,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      resolve({ ok: false, text: 'The command was cancelled before it started.' });
      return;
    }
    // detached: bash leads a new process group, so one kill reaches everything it started.
    const child = spawn('bash', ['-c', script], {
      cwd,
      detached: true,
      // On Windows a detached child gets a console of its own: not shown.
      windowsHide: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (child.pid !== undefined) announce(child.pid, 'started');
    const output = new HeadTailBuffer(bash.outputByteLimit);
    let ended: 'timeout' | 'cancelled' | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;

    const killGroup = (): void => {
      if (child.pid === undefined) return;
      if (process.platform === 'win32') {
        // Not after bash exited: its id may be another process's by now, and taskkill /T would end
        // that one's tree. The pipes its background children hold are closed instead.
        if (exit === undefined) void killProcessTree(child.pid, true);
        else {
          child.stdout.destroy();
          child.stderr.destroy();
        }
        return;
      }
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const end = (why: 'timeout' | 'cancelled'): void => {
      ended ??= why;
      killGroup();
    };
    const onAbort = (): void => end('cancelled');
    // Past the longest timer delay Node fires at once: `timeoutSecs: 3000000` killed every command.
    const timer = setTimeout(() => end('timeout'), timerDelay(bash.timeoutSecs * 1000));
    signal.addEventListener('abort', onAbort, { once: true });
    const cleanup = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };

    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    child.on('error', (error) => {
      cleanup();
      reject(error);
    });
    child.on('exit', (code, exitSignal) => {
      exit = { code, signal: exitSignal };
      // Background children still hold the pipes open; without this 'close' would wait for them.
      if (process.platform !== 'win32') killGroup();
      // Reaped: from now on the id may be reused, and nobody must kill that group.
      if (child.pid !== undefined) announce(child.pid, 'exited');
    });
    child.on('close', () => {
      cleanup();
      const text = output.text() || '(no output)';
      const group = process.platform === 'win32' ? 'process tree' : 'process group';
      if (ended === 'timeout') {
        resolve({
          ok: false,
          text: `${text}\n[The command timed out after ${bash.timeoutSecs}s; its ${group} was killed]`,
        });
      } else if (ended === 'cancelled') {
        resolve({ ok: false, text: `${text}\n[The command was cancelled; its ${group} was killed]` });
      } else {
        const status =
          exit?.code !== null && exit?.code !== undefined
            ? `exit code ${exit.code}`
            : `killed by ${exit?.signal ?? 'a signal'}`;
        resolve({ ok: exit?.code === 0, text: `${text}\n[${status}]` });
      }
    });
  });
}

/** Keeps the first and last halves of a byte budget; the middle is replaced by a note. */
class HeadTailBuffer {
  readonly #half: number;
  #head: Buffer[] = [];
  #headBytes = 0;
  #tail: Buffer[] = [];
  #tailBytes = 0;
  #dropped = 0;

  constructor(limit: number) {
    this.#half = Math.max(1, Math.floor(limit / 2));
  }

  push(chunk: Buffer): void {
    let rest = chunk;
    if (this.#headBytes < this.#half) {
      const take = rest.subarray(0, this.#half - this.#headBytes);
      this.#head.push(take);
      this.#headBytes += take.length;
      rest = rest.subarray(take.length);
    }
    if (rest.length === 0) return;
    this.#tail.push(rest);
    this.#tailBytes += rest.length;
    while (this.#tailBytes > this.#half) {
      const first = this.#tail[0];
      if (first === undefined) break;
      const excess = this.#tailBytes - this.#half;
      if (first.length <= excess) {
        this.#tail.shift();
        this.#tailBytes -= first.length;
        this.#dropped += first.length;
      } else {
        this.#tail[0] = first.subarray(excess);
        this.#tailBytes -= excess;
        this.#dropped += excess;
      }
    }
  }

  text(): string {
    if (this.#dropped === 0)
      return Buffer.concat([...this.#head, ...this.#tail])
        .toString('utf8')
        .replace(/\n$/, '');
    const head = Buffer.concat(this.#head).toString('utf8');
    const tail = Buffer.concat(this.#tail).toString('utf8');
    return `${head}\n[... ${this.#dropped} bytes of output omitted ...]\n${tail}`.replace(/\n$/, '');
  }
}
