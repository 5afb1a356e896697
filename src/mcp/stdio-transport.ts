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
 */
import type { ChildProcess } from 'node:child_process';
import { PassThrough } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import spawn from 'cross-spawn';
import { MCP_CLOSE_GRACE_MS } from './constants.ts';
import { killProcessTree, killRecordedTree, processTree } from './process-tree.ts';
import { type LineParser, LineReadBuffer, requestTooLongAnswer } from './read-buffer.ts';

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

/** An MCP client transport to a child process over its stdin and stdout. */
export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #options: StdioTransportOptions;
  readonly #buffer: LineReadBuffer<JSONRPCMessage>;
  readonly #stderr = new PassThrough();
  #process: ChildProcess | undefined;
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
      const child = spawn(command, [...args], {
        env: { ...env },
        cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        windowsHide: true,
      });
      this.#process = child;
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
        for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
          if (!running()) break;
          try {
            child.kill(signal);
          } catch {
            // It exited meanwhile.
          }
          if (signal === 'SIGTERM') await waited();
        }
      }
    }
    this.#buffer.clear();
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
