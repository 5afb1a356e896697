/**
 * troupe's own stdio transport for the MCP SDK's Client: it implements the SDK's public `Transport`
 * interface, so the bound on what a server sends (read-buffer.ts) does not depend on a private
 * field of the SDK's `StdioClientTransport` (`_readBuffer`), which an SDK update could rename and
 * silently unbound every stdio server.
 *
 * It does what the SDK's did otherwise: spawns the server with `cross-spawn`, as the SDK does (no
 * shell on POSIX; on Windows a `.cmd`/`.bat` shim such as `npx`, which Node >= 20.12 refuses to
 * spawn without a shell, runs through cmd.exe with its arguments escaped), writes each message as a
 * line on its stdin, reads lines from its stdout with a {@link LineReadBuffer}, keeps its stderr
 * for the caller, and closes by ending stdin, then SIGTERM, then SIGKILL, each after
 * {@link MCP_CLOSE_GRACE_MS}; on Windows `taskkill /T`, then `taskkill /T /F`, in place of the
 * signals, which would end only `cmd.exe` and not the server a `.cmd` shim started under it.
 *
 * On POSIX the server leads a process group of its own (`detached`), and the signals go to the
 * whole group: a server that exits by itself at the end of its stdin left what it started (a
 * `sleep 1000 &`, a helper) running for ever, since only the server itself was ever signalled.
 * The group is signalled once the server has exited, whether troupe closed it or it exited by
 * itself; a server that forks its real work off and exits (daemonizes) is ended with it. In its own
 * group a server no longer gets the terminal's Ctrl-C: troupe's close of its pools ends it, and the
 * groups still there when the process ends get SIGKILL (server-groups.ts). A troupe killed
 * with SIGKILL runs neither: each server sees the end of its stdin (the pipe closes with troupe),
 * and what a server leaves running after that lives on, as it did before.
 */
import type { ChildProcess } from 'node:child_process';
import { PassThrough } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import spawn from 'cross-spawn';
import { MCP_CLOSE_GRACE_MS, MCP_GROUP_POLL_MS } from './constants.ts';
import { killProcessTree, killRecordedTree, processTree } from './process-tree.ts';
import { type LineParser, LineReadBuffer, requestTooLongAnswer } from './read-buffer.ts';
import { unwatchServerGroup, watchServerGroup } from './server-groups.ts';

/** How to start a stdio server, and the bounds on what it sends. */
export interface StdioTransportOptions {
  readonly command: string;
  readonly args: readonly string[];
  /** The server's whole environment (nothing else is inherited). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Bytes of one message held at most (see {@link LineReadBuffer}). */
  readonly maxMessageBytes: number;
  /** Bytes one line may run to, read past. @default stdioLineBound(maxMessageBytes) */
  readonly maxLineBytes?: number;
  /** Turns a line into a message; throws when it is not one. */
  readonly parse: LineParser<JSONRPCMessage>;
  /** A notification (or a line not JSON) over `maxMessageBytes` was read past and dropped. */
  readonly onDropped?: (lineBytes: number) => void;
  /**
   * A line ran past `maxLineBytes`: nothing more is read. Told after every message read before
   * that line was passed on, so an answer refused earlier in the same read reaches its call first.
   */
  readonly onFramingLost?: (lineBytes: number) => void;
  /**
   * Time the server gets after its stdin is closed, then after SIGTERM (Windows: `taskkill /T`).
   * @default MCP_CLOSE_GRACE_MS
   */
  readonly closeGraceMs?: number;
}

/** Sends `signal` to every process of group `pgid`; false when there is none. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    // EPERM: a process of the group runs as another user (setuid); the group is still there.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether group `pgid` has no process left, as soon as it has none or once `ms` have gone by. */
async function groupGone(pgid: number, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += MCP_GROUP_POLL_MS) {
    if (!signalGroup(pgid, 0)) return true;
    await new Promise<void>((resolve) => setTimeout(resolve, MCP_GROUP_POLL_MS).unref());
  }
  return !signalGroup(pgid, 0);
}

/** An MCP client transport to a child process over its stdin and stdout. */
export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #options: StdioTransportOptions;
  readonly #buffer: LineReadBuffer<JSONRPCMessage>;
  readonly #stderr = new PassThrough();
  #process: ChildProcess | undefined;
  /** POSIX: the server's process group (its pid) until it has been ended. */
  #group: number | undefined;
  /** POSIX: the ending of the group, once begun (SIGTERM, then SIGKILL after the grace). */
  #groupEnded: Promise<void> | undefined;
  #started = false;
  /** Bytes of the line that ran past its bound, until told after the messages before it. */
  #lostLine: number | undefined;

  constructor(options: StdioTransportOptions) {
    this.#options = options;
    const limit = options.maxMessageBytes;
    this.#buffer = new LineReadBuffer(limit, options.parse, {
      ...(options.maxLineBytes === undefined ? {} : { maxLineBytes: options.maxLineBytes }),
      // A request over the bound (sampling, elicitation) is answered, or the server waits.
      onRequestTooLong: (id) => {
        this.send(requestTooLongAnswer(id, limit)).catch(() => {});
      },
      onFramingLost: (lineBytes) => {
        this.#lostLine = lineBytes;
      },
      ...(options.onDropped === undefined ? {} : { onDropped: options.onDropped }),
    });
  }

  /** The buffer the server's messages are read with (the flood guard stops it). */
  get readBuffer(): LineReadBuffer<JSONRPCMessage> {
    return this.#buffer;
  }

  /** The server's stderr, readable before {@link start} so nothing it writes early is lost. */
  get stderr(): PassThrough {
    return this.#stderr;
  }

  /** The server's process id, while it runs. */
  get pid(): number | undefined {
    return this.#process?.pid;
  }

  /** Spawns the server; resolves once it has started, rejects when it cannot be. */
  start(): Promise<void> {
    if (this.#started) throw new Error('the stdio transport was already started');
    this.#started = true;
    const { command, args, env, cwd } = this.#options;
    return new Promise<void>((resolve, reject) => {
      const posix = process.platform !== 'win32';
      const child = spawn(command, [...args], {
        env: { ...env },
        cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        windowsHide: true,
        // Its own process group, signalled whole. Not on Windows: there it would get a console.
        ...(posix ? { detached: true } : {}),
      });
      this.#process = child;
      if (posix && child.pid !== undefined) {
        this.#group = child.pid;
        watchServerGroup(child.pid);
        // 'exit', not 'close': what the server left running may hold its stdout open.
        child.once('exit', () => void this.#endGroup());
      }
      child.on('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.on('spawn', () => resolve());
      child.on('close', () => {
        this.#process = undefined;
        this.onclose?.();
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('data', (chunk: Buffer) => this.#read(chunk));
      child.stdout?.on('error', (error) => this.onerror?.(error));
      child.stderr?.pipe(this.#stderr);
    });
  }

  /** Writes one message as a line; waits for the pipe to drain when it is full. */
  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#process?.stdin;
    if (!stdin) return Promise.reject(new Error('Not connected'));
    return new Promise<void>((resolve) => {
      if (stdin.write(`${JSON.stringify(message)}\n`)) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /**
   * Ends the server's stdin, then SIGTERM, then SIGKILL, each after the grace time; reads no more.
   * On POSIX the signals go to the server's process group, also when the server exited at the end
   * of its stdin: what it started is ended with it.
   * On Windows the signals are `taskkill /T` and `taskkill /T /F` of the server's process tree
   * (each waited for at most `MCP_TASKKILL_TIMEOUT_MS`); the tree is recorded first, so that when
   * the server exits on the first, the processes below it that are still there are forced too.
   */
  async close(): Promise<void> {
    const child = this.#process;
    this.#process = undefined;
    if (child) {
      const grace = this.#options.closeGraceMs ?? MCP_CLOSE_GRACE_MS;
      const closed = new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve();
        else child.once('close', () => resolve());
      });
      const waited = (): Promise<void> =>
        Promise.race([closed, new Promise<void>((resolve) => setTimeout(resolve, grace).unref())]);
      try {
        child.stdin?.end();
      } catch {
        // The pipe is already gone.
      }
      await waited();
      const running = (): boolean => child.exitCode === null && child.signalCode === null;
      const pid = child.pid;
      if (process.platform === 'win32' && pid !== undefined) {
        // A signal would end only the process spawned, cmd.exe for a .cmd shim (npx), and leave
        // the server it runs: its whole tree is ended instead, asked first, then forced. When
        // cmd.exe exits on the asking, what is below it may not have: taskkill /T no longer finds
        // them from its id, so they are recorded before and forced by their own ids.
        const tree = running() ? await processTree(pid) : [];
        if (running()) {
          await killProcessTree(pid, false);
          await waited();
        }
        if (running()) await killProcessTree(pid, true);
        else await killRecordedTree(tree);
      } else {
        await this.#endGroup();
      }
    }
    // A server that exited by itself may still have its group's ending under way.
    await this.#groupEnded;
    this.#buffer.clear();
  }

  /**
   * POSIX: SIGTERM to the server's whole process group, then SIGKILL once the grace time has gone
   * by with a process of it still there; at most once. While a process of the group is there its
   * id cannot be given to another group, so a group seen to be there is this server's.
   */
  #endGroup(): Promise<void> {
    const pgid = this.#group;
    if (pgid === undefined) return Promise.resolve();
    this.#groupEnded ??= (async () => {
      const grace = this.#options.closeGraceMs ?? MCP_CLOSE_GRACE_MS;
      try {
        if (!signalGroup(pgid, 'SIGTERM')) return;
        // Not once it is gone: its id may then be given to another group.
        if (!(await groupGone(pgid, grace))) signalGroup(pgid, 'SIGKILL');
      } finally {
        this.#group = undefined;
        unwatchServerGroup(pgid);
      }
    })();
    return this.#groupEnded;
  }

  /** Takes a chunk of stdout: its messages go on in order, then a lost framing is told. */
  #read(chunk: Buffer): void {
    this.#buffer.append(chunk);
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#buffer.readMessage();
      } catch (error) {
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
        continue;
      }
      if (message === null) break;
      this.onmessage?.(message);
    }
    const lost = this.#lostLine;
    if (lost !== undefined) {
      this.#lostLine = undefined;
      this.#options.onFramingLost?.(lost);
    }
  }
}
