/**
 * One connection to one MCP server, through the official SDK (`@modelcontextprotocol/sdk`): stdio
 * (a child process) or Streamable HTTP (or the older HTTP+SSE).
 *
 * A connection starts on first use and lists the server's tools. When the server dies (the child
 * exits, the HTTP session is gone), calls in flight fail at once with a tool error that says so
 * (the call may or may not have taken effect: it is never re-sent), and the next call restarts the
 * server after a backoff (500 ms doubling to 30 s). After {@link MCP_MAX_RESTARTS} failed starts or
 * deaths in a row, calls fail at once until {@link McpConnection.reset}, or until the longest
 * backoff (30 s) has passed since the last failure: then one start is tried again. Every wait is bounded:
 * connecting, listing, calling, restarting and closing.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { sleep } from '../abort.ts';
import { readableErrorText, SystemError } from '../errors.ts';
import { timeLimit } from '../option-checks.ts';
import type { ToolTraceContext } from '../tools/types.ts';
import { BodyTooLong, boundedFetch } from './bounded-fetch.ts';
import { expandMcpServerConfig, type McpServerConfig, registerServerCredentials } from './config.ts';
import {
  MCP_CALL_TIMEOUT_MS,
  MCP_CONNECT_TIMEOUT_MS,
  MCP_ERROR_TEXT_MAX_CHARS,
  MCP_LIST_TIMEOUT_MS,
  MCP_MAX_LIST_PAGES,
  MCP_MAX_NOTIFICATION_BYTES_PER_MINUTE,
  MCP_MAX_NOTIFICATIONS_PER_MINUTE,
  MCP_MAX_NOTIFICATIONS_PER_SECOND,
  MCP_MAX_RESTARTS,
  MCP_MAX_TOOLS_PER_SERVER,
  MCP_RESTART_BASE_DELAY_MS,
  MCP_RESTART_MAX_DELAY_MS,
  MCP_STDIO_MAX_MESSAGE_BYTES,
  stdioLineBound,
} from './constants.ts';
import { FloodGuard } from './flood-guard.ts';
import { lazyOutputSchemas } from './output-schemas.ts';
import { isMessageTooLong, type LineReadBuffer } from './read-buffer.ts';
import { StdioTransport } from './stdio-transport.ts';

/** The SDK's classes a connection uses. */
interface McpSdk {
  readonly Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client;
  readonly SSEClientTransport: typeof import('@modelcontextprotocol/sdk/client/sse.js').SSEClientTransport;
  readonly getDefaultEnvironment: typeof import('@modelcontextprotocol/sdk/client/stdio.js').getDefaultEnvironment;
  readonly StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport;
  readonly StreamableHTTPError: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPError;
  readonly ErrorCode: typeof import('@modelcontextprotocol/sdk/types.js').ErrorCode;
  readonly McpError: typeof import('@modelcontextprotocol/sdk/types.js').McpError;
  readonly deserializeMessage: typeof import('@modelcontextprotocol/sdk/shared/stdio.js').deserializeMessage;
}

let sdkLoading: Promise<McpSdk> | undefined;

/**
 * The SDK, imported on the first connection rather than with this module: it is ~155 modules (zod
 * and zod-to-json-schema included), the largest part of an actor-host thread's start, and a thread
 * whose agents have no MCP servers never needs it.
 */
function loadSdk(): Promise<McpSdk> {
  sdkLoading ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/sse.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('@modelcontextprotocol/sdk/shared/stdio.js'),
  ]).then(
    ([client, sse, stdio, http, types, lines]) => ({
      Client: client.Client,
      SSEClientTransport: sse.SSEClientTransport,
      getDefaultEnvironment: stdio.getDefaultEnvironment,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      StreamableHTTPError: http.StreamableHTTPError,
      ErrorCode: types.ErrorCode,
      McpError: types.McpError,
      deserializeMessage: lines.deserializeMessage,
    }),
    (error: unknown) => {
      sdkLoading = undefined;
      throw error;
    },
  );
  return sdkLoading;
}

/** A tool as the server lists it. */
export interface McpToolInfo {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly readOnlyHint?: boolean;
}

/** What a call returned (the MCP `CallToolResult`, loosely typed: servers vary). */
export interface McpCallResult {
  readonly content?: readonly Readonly<Record<string, unknown>>[];
  readonly structuredContent?: unknown;
  readonly isError?: boolean;
}

/** Where a connection stands. */
export type McpServerStatus = 'idle' | 'connecting' | 'ready' | 'restarting' | 'failed' | 'closed';

/** Bounds of a connection; every field has a default in constants.ts. */
export interface McpConnectionOptions {
  /** Working directory of a stdio server when its settings give none. */
  readonly cwd: string;
  /** Environment `${VAR}` expands from. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Time to start a server and get its `initialize` answer; at most MAX_TIMER_MS. @default MCP_CONNECT_TIMEOUT_MS */
  readonly connectTimeoutMs?: number;
  /** Time for the whole `tools/list` listing, every page. @default MCP_LIST_TIMEOUT_MS */
  readonly listTimeoutMs?: number;
  readonly callTimeoutMs?: number;
  readonly maxRestarts?: number;
  readonly restartBaseDelayMs?: number;
  readonly restartMaxDelayMs?: number;
  /**
   * Bytes one message from a server may have, unless the server's settings give their own
   * `maxMessageBytes`. A longer answer fails its call (`mcp_call_failed`) and the server goes on;
   * a longer request of the server's is answered with an error; a longer server-sent event, or a
   * stdio line longer than `stdioLineBound` of this (8 times, at least 64 MiB), ends the session.
   * @default MCP_STDIO_MAX_MESSAGE_BYTES
   */
  readonly maxMessageBytes?: number;
  /**
   * Bytes one stdio line may run to, read past without being held, before troupe takes the
   * server's framing as lost and closes the connection.
   * @default stdioLineBound(maxMessageBytes): 8 × maxMessageBytes, at least 64 MiB
   */
  readonly maxLineBytes?: number;
  /**
   * Notifications and requests a server may send in one second; past it troupe closes the
   * connection. @default MCP_MAX_NOTIFICATIONS_PER_SECOND
   */
  readonly maxNotificationsPerSecond?: number;
  /**
   * Notifications and requests a server may send in the last 60 seconds; past it troupe closes
   * the connection. @default MCP_MAX_NOTIFICATIONS_PER_MINUTE
   */
  readonly maxNotificationsPerMinute?: number;
  /**
   * UTF-8 bytes of the notifications and requests a server (stdio or HTTP) may send in the last 60
   * seconds; past it troupe closes the connection. @default MCP_MAX_NOTIFICATION_BYTES_PER_MINUTE
   */
  readonly maxNotificationBytesPerMinute?: number;
  /**
   * Told when a stdio server's process starts and ends, so whoever owns the thread can kill the
   * processes a dead thread leaves behind (a terminated worker thread cannot stop its children).
   */
  readonly onProcess?: (pid: number, state: 'started' | 'exited') => void;
}

interface Session {
  readonly sdk: McpSdk;
  readonly client: Client;
  readonly transport: Transport;
  readonly tools: readonly McpToolInfo[];
  alive: boolean;
  /** Why the session ended, once it has. */
  ended: string | undefined;
}

const STDERR_TAIL_CHARS = 2000;

/** A lazily started, self-restarting connection to one MCP server. */
export class McpConnection {
  readonly name: string;
  readonly config: McpServerConfig;
  readonly #options: Required<Omit<McpConnectionOptions, 'env' | 'onProcess' | 'maxLineBytes'>> &
    Pick<McpConnectionOptions, 'env' | 'onProcess' | 'maxLineBytes'>;
  #session: Session | undefined;
  #connecting: Promise<Session> | undefined;
  #failures = 0;
  #nextAttemptAt = 0;
  #lastFailureAt = 0;
  #lastError: string | undefined;
  #closed = false;
  #stderr = '';
  /** The last listing stopped at MCP_MAX_TOOLS_PER_SERVER tools or MCP_MAX_LIST_PAGES pages. */
  #toolsCut = false;
  /** Set when troupe ended an HTTP session because a message was too long. */
  #oversized = false;
  /**
   * What the server sent past the notification bounds (`more than 1000 notifications in one
   * second`), once troupe closed the connection for it.
   */
  #flooded: string | undefined;
  /** Set when a stdio line ran past its bound, with the bytes read of it: troupe closed the connection. */
  #framingLost: number | undefined;

  constructor(name: string, config: McpServerConfig, options: McpConnectionOptions) {
    this.name = name;
    this.config = config;
    this.#options = {
      cwd: options.cwd,
      env: options.env,
      onProcess: options.onProcess,
      maxLineBytes: options.maxLineBytes,
      connectTimeoutMs: timeLimit(
        'connectTimeoutMs',
        options.connectTimeoutMs,
        MCP_CONNECT_TIMEOUT_MS,
        'positive integer',
      ),
      listTimeoutMs: options.listTimeoutMs ?? MCP_LIST_TIMEOUT_MS,
      callTimeoutMs: options.callTimeoutMs ?? MCP_CALL_TIMEOUT_MS,
      maxRestarts: options.maxRestarts ?? MCP_MAX_RESTARTS,
      restartBaseDelayMs: options.restartBaseDelayMs ?? MCP_RESTART_BASE_DELAY_MS,
      restartMaxDelayMs: options.restartMaxDelayMs ?? MCP_RESTART_MAX_DELAY_MS,
      maxMessageBytes: config.maxMessageBytes ?? options.maxMessageBytes ?? MCP_STDIO_MAX_MESSAGE_BYTES,
      maxNotificationsPerSecond: options.maxNotificationsPerSecond ?? MCP_MAX_NOTIFICATIONS_PER_SECOND,
      maxNotificationsPerMinute: options.maxNotificationsPerMinute ?? MCP_MAX_NOTIFICATIONS_PER_MINUTE,
      maxNotificationBytesPerMinute:
        options.maxNotificationBytesPerMinute ?? MCP_MAX_NOTIFICATION_BYTES_PER_MINUTE,
    };
  }

  /** Where the connection stands now. */
  get status(): McpServerStatus {
    if (this.#closed) return 'closed';
    if (this.#session?.alive) return 'ready';
    if (this.#connecting) return this.#failures > 0 ? 'restarting' : 'connecting';
    if (this.#failures >= this.#options.maxRestarts) return 'failed';
    return this.#failures > 0 ? 'restarting' : 'idle';
  }

  /** Why the last start failed or the server last died. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /** Failed starts and deaths since the last successful call. */
  get failures(): number {
    return this.#failures;
  }

  /** The process id of a running stdio server. */
  get pid(): number | undefined {
    const session = this.#session;
    if (!session?.alive || !(session.transport instanceof StdioTransport)) return undefined;
    return session.transport.pid;
  }

  /** The server's tools, connecting (or restarting) first when needed. */
  async tools(signal?: AbortSignal): Promise<readonly McpToolInfo[]> {
    return (await this.#ready(signal)).tools;
  }

  /**
   * Whether the server listed more tools than troupe takes (MCP_MAX_TOOLS_PER_SERVER, or more pages
   * than MCP_MAX_LIST_PAGES): the rest were not read. Set by the last listing.
   */
  get toolsCut(): boolean {
    return this.#toolsCut;
  }

  /**
   * Calls a tool. Throws SystemError `mcp_unavailable` when the server cannot be reached,
   * `mcp_server_died` when it died during the call, `mcp_timeout` when it did not answer in time,
   * and `mcp_call_failed` for a protocol error the server returned, an HTTP error status
   * (`fields.status`) it answered with, or an answer (a stdio line, an HTTP JSON body) longer
   * than `maxMessageBytes` (`fields.limit`; the answer is not read, and the server goes on).
   * `trace` goes in the request's `_meta` (`traceparent`, `tracestate`: the keys MCP reserves for
   * W3C trace context, SEP-414), so the server's spans join the caller's trace.
   */
  async call(
    tool: string,
    args: Readonly<Record<string, unknown>>,
    signal: AbortSignal,
    trace?: ToolTraceContext,
  ): Promise<McpCallResult> {
    const session = await this.#ready(signal);
    const params = {
      name: tool,
      arguments: { ...args },
      ...(trace === undefined ? {} : { _meta: { ...trace } }),
    };
    try {
      const result = (await session.client.callTool(params, undefined, {
        signal,
        timeout: this.#options.callTimeoutMs,
        maxTotalTimeout: this.#options.callTimeoutMs,
      })) as McpCallResult;
      this.#failures = 0;
      return result;
    } catch (error) {
      if (signal.aborted) throw error;
      const message = errorMessage(error);
      const { ErrorCode, McpError } = session.sdk;
      const limit =
        error instanceof McpError && isMessageTooLong(error.data)
          ? error.data.limit
          : error instanceof BodyTooLong
            ? error.limit
            : undefined;
      // The refusal of an answer over the bound is the server answering, even when the server was
      // closed right after it (a line without end in the same read).
      if (limit !== undefined) {
        throw new SystemError(
          'mcp_call_failed',
          `MCP server \`${this.name}\` answered \`${tool}\` with a message longer than ${limit} bytes, ` +
            'the most troupe reads from one message; the answer was not read. Raise `maxMessageBytes` in the ' +
            "server's settings to read longer answers.",
          { server: this.name, tool, limit },
        );
      }
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        throw new SystemError(
          'mcp_timeout',
          `MCP server \`${this.name}\` did not answer \`${tool}\` within ${this.#options.callTimeoutMs} ms`,
          { server: this.name, tool },
        );
      }
      // An HTTP error status is the server answering too (its handler failed), except 404: that
      // is how Streamable HTTP says the session is gone, and a new one is started.
      const status = error instanceof session.sdk.StreamableHTTPError ? error.code : undefined;
      if (session.alive && status !== undefined && status >= 400 && status !== 404) {
        throw new SystemError(
          'mcp_call_failed',
          `MCP server \`${this.name}\` answered \`${tool}\` with HTTP ${status} (${message}); ` +
            'the call may or may not have taken effect',
          { server: this.name, tool, status },
        );
      }
      // An answer that is not a tool result (an image whose data is not base64, say) is the server
      // answering too: it is not restarted for it.
      const invalid = invalidAnswer(error);
      if (session.alive && invalid !== undefined) {
        throw new SystemError(
          'mcp_call_failed',
          `MCP server \`${this.name}\` answered \`${tool}\` with a result that is not valid MCP: ${invalid}`,
          { server: this.name, tool },
        );
      }
      // A JSON-RPC error is the server answering; anything else (the connection closed, the HTTP
      // session or server gone, a network error) means the server cannot be reached any more.
      const answered = error instanceof McpError && error.code !== ErrorCode.ConnectionClosed;
      if (!session.alive || !answered) {
        this.#ended(session, session.ended ?? message);
        throw new SystemError(
          'mcp_server_died',
          `MCP server \`${this.name}\` stopped during the call to \`${tool}\` (${session.ended ?? message}); ` +
            'the call may or may not have taken effect. The server is restarted for the next call.',
          { server: this.name, tool },
        );
      }
      throw new SystemError(
        'mcp_call_failed',
        `MCP server \`${this.name}\` refused \`${tool}\`: ${message}`,
        {
          server: this.name,
          tool,
        },
      );
    }
  }

  /** Forgets past failures, so a server that gave up is tried again. */
  reset(): void {
    this.#failures = 0;
    this.#nextAttemptAt = 0;
  }

  /** Closes the connection (a stdio server gets its stdin closed, then SIGTERM, then SIGKILL). */
  async close(): Promise<void> {
    this.#closed = true;
    const session = this.#session ?? (await this.#connecting?.catch(() => undefined));
    this.#session = undefined;
    if (session) {
      session.alive = false;
      await session.client.close().catch(() => {});
    }
  }

  async #ready(signal: AbortSignal | undefined): Promise<Session> {
    if (this.#closed) throw this.#unavailable('the connection is closed');
    if (this.#session?.alive) return this.#session;
    if (!this.#connecting) {
      // Given up, but not for good: a server the user restarts, or one that was down for a while,
      // is tried again (once per restartMaxDelayMs while it keeps failing).
      if (
        this.#failures >= this.#options.maxRestarts &&
        Date.now() - this.#lastFailureAt < this.#options.restartMaxDelayMs
      ) {
        throw this.#unavailable(
          `it failed ${this.#failures} times in a row (last: ${this.#lastError ?? 'unknown'}); ` +
            `it is tried again ${this.#options.restartMaxDelayMs} ms after its last failure`,
        );
      }
      this.#connecting = this.#connect().finally(() => {
        this.#connecting = undefined;
      });
    }
    const connecting = this.#connecting;
    if (!signal) return connecting;
    signal.throwIfAborted();
    // The start goes on for other callers; this caller stops waiting when its signal aborts.
    return new Promise<Session>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      connecting.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  async #connect(): Promise<Session> {
    const wait = this.#nextAttemptAt - Date.now();
    if (wait > 0) await sleep(Math.min(wait, this.#options.restartMaxDelayMs));
    let transport: Transport | undefined;
    let client: Client | undefined;
    let ready: Session | undefined;
    try {
      // Loading the SDK (local modules, on a thread's first connection) is not the server's time.
      const sdk = await loadSdk();
      const deadline = AbortSignal.timeout(this.#options.connectTimeoutMs);
      let readBuffer: LineReadBuffer<unknown> | undefined;
      let onDropped: (lineBytes: number) => void = () => {};
      transport = this.#transport(
        sdk,
        () => {
          // An HTTP server sent a message over the bound: end the session so calls fail now.
          this.#oversized = true;
          void client?.close().catch(() => {});
        },
        (buffer) => {
          readBuffer = buffer;
        },
        (lineBytes) => onDropped(lineBytes),
        (lineBytes) => {
          // A stdio line that never ends: nothing after it can be read, so every call in flight
          // fails now (the buffer has stopped) instead of waiting out its time limit.
          this.#framingLost = lineBytes;
          if (ready) this.#ended(ready, this.#exitReason());
          else void client?.close().catch(() => {});
        },
      );
      client = new sdk.Client(
        { name: 'troupe', version: '0.1.0' },
        { capabilities: {}, jsonSchemaValidator: lazyOutputSchemas },
      );
      this.#oversized = false;
      this.#flooded = undefined;
      this.#framingLost = undefined;
      const guard = new FloodGuard({
        perSecond: this.#options.maxNotificationsPerSecond,
        perMinute: this.#options.maxNotificationsPerMinute,
        bytesPerMinute: this.#options.maxNotificationBytesPerMinute,
      });
      const unasked = (bytes: number): void => {
        if (this.#flooded !== undefined) return;
        const past = guard.count(bytes);
        if (past === undefined) return;
        this.#flooded = past;
        // Nothing more is taken from this server, answers read with the flood included: a
        // call in flight fails for it, whatever came in the same read.
        readBuffer?.stop();
        if (ready) this.#ended(ready, this.#floodText());
        else void client?.close().catch(() => {});
      };
      // A stdio notification over the bound is dropped unread, but counts all the same.
      onDropped = unasked;
      // Kept by the SDK's Client, which calls it before its own handling of each message.
      transport.onmessage = (message: unknown) => {
        if (typeof (message as { method?: unknown }).method === 'string') {
          unasked(messageBytes(message as object));
        }
        trimToolList(message);
      };
      const session: Session = { sdk, client, transport, tools: [], alive: true, ended: undefined };
      const started = client.connect(transport, {
        timeout: this.#options.connectTimeoutMs,
        signal: deadline,
      });
      // The child is spawned synchronously by connect(): report it before anything can fail.
      const pid = transport instanceof StdioTransport ? transport.pid : undefined;
      const onProcess = this.#options.onProcess;
      if (pid !== undefined && onProcess) {
        onProcess(pid, 'started');
        const previous = transport.onclose;
        transport.onclose = () => {
          previous?.();
          onProcess(pid, 'exited');
        };
      }
      await raceDeadline(
        started,
        deadline,
        `it did not answer \`initialize\` within ${this.#options.connectTimeoutMs} ms`,
      );
      const tools = await this.#listTools(sdk, client);
      const live: Session = { ...session, tools };
      ready = live;
      if (this.#flooded !== undefined) throw new Error(this.#floodText());
      if (this.#framingLost !== undefined) throw new Error(this.#exitReason());
      // The SDK calls onclose when the child exits or the HTTP session ends.
      const previous = transport.onclose;
      transport.onclose = () => {
        previous?.();
        this.#ended(live, this.#exitReason());
      };
      if (this.#closed) {
        await client.close().catch(() => {});
        throw this.#unavailable('the connection was closed while it started');
      }
      this.#session = live;
      return live;
    } catch (error) {
      await client?.close().catch(() => {});
      await transport?.close().catch(() => {});
      if (error instanceof SystemError && error.code === 'mcp_unavailable') throw error;
      const why =
        this.#flooded !== undefined || this.#framingLost !== undefined
          ? this.#exitReason()
          : `${errorMessage(error)}${this.#stderrTail()}`;
      this.#failed(why);
      throw this.#unavailable(`it could not be started: ${why}`);
    }
  }

  /** The server's tools: every page within one deadline (listTimeoutMs), at most the bounds. */
  async #listTools(sdk: McpSdk, client: Client): Promise<McpToolInfo[]> {
    this.#toolsCut = false;
    if (!client.getServerCapabilities()?.tools) return [];
    const tools: McpToolInfo[] = [];
    const ms = this.#options.listTimeoutMs;
    const deadline = AbortSignal.timeout(ms);
    let cursor: string | undefined;
    for (let page = 0; page < MCP_MAX_LIST_PAGES; page += 1) {
      const request = client.listTools(cursor === undefined ? {} : { cursor }, {
        signal: deadline,
        timeout: ms,
      });
      const late = `it answered \`initialize\` but did not list its tools (\`tools/list\`${page === 0 ? '' : `, page ${page + 1}`}) within ${ms} ms`;
      const listed = await raceDeadline(
        request.catch((error: unknown) => {
          const timedOut = error instanceof sdk.McpError && error.code === sdk.ErrorCode.RequestTimeout;
          throw timedOut || deadline.aborted ? new Error(late) : error;
        }),
        deadline,
        late,
      );
      for (const tool of listed.tools) {
        if (tools.length >= MCP_MAX_TOOLS_PER_SERVER) {
          this.#toolsCut = true;
          return tools;
        }
        tools.push({
          name: tool.name,
          ...(tool.description === undefined ? {} : { description: tool.description }),
          inputSchema: tool.inputSchema as Record<string, unknown>,
          ...(tool.annotations?.readOnlyHint === undefined
            ? {}
            : { readOnlyHint: tool.annotations.readOnlyHint }),
        });
      }
      cursor = listed.nextCursor;
      if (cursor === undefined) break;
      if (page === MCP_MAX_LIST_PAGES - 1) this.#toolsCut = true;
    }
    return tools;
  }

  #transport(
    sdk: McpSdk,
    onOversized: () => void,
    onReadBuffer: (buffer: LineReadBuffer<unknown>) => void,
    onDropped: (lineBytes: number) => void,
    onFramingLost: (lineBytes: number) => void,
  ): Transport {
    const env = this.#options.env ?? process.env;
    const { config, missing } = expandMcpServerConfig(this.config, env);
    if (missing.length > 0) {
      throw new SystemError(
        'mcp_config',
        `unset environment variable(s) ${missing.map((v) => `\`${v}\``).join(', ')}`,
      );
    }
    registerServerCredentials(config);
    if (config.type === 'stdio') {
      this.#stderr = '';
      // troupe's own transport (stdio-transport.ts): the SDK's reads without troupe's bounds.
      const transport = new StdioTransport({
        command: config.command,
        args: config.args,
        // Servers get the SDK's safe default variables plus their own: API keys of the run stay out.
        env: { ...sdk.getDefaultEnvironment(), ...config.env },
        cwd: config.cwd ?? this.#options.cwd,
        maxMessageBytes: this.#options.maxMessageBytes,
        ...(this.#options.maxLineBytes === undefined ? {} : { maxLineBytes: this.#options.maxLineBytes }),
        parse: (line, bytes) => {
          const message = sdk.deserializeMessage(line);
          stdioLineBytes.set(message, bytes);
          return message;
        },
        onDropped,
        onFramingLost,
      });
      onReadBuffer(transport.readBuffer);
      transport.stderr.on('data', (chunk: Buffer) => {
        this.#stderr = (this.#stderr + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
      });
      return transport;
    }
    const url = new URL(config.url);
    const requestInit = { headers: { ...config.headers } };
    // The SDK reads HTTP bodies without a bound: an event that never ends grew a thread to its
    // heap limit in seconds. Each message (a JSON body, or one server-sent event) is held to the
    // stdio bound.
    const fetch = boundedFetch(this.#options.maxMessageBytes, onOversized);
    return config.type === 'sse'
      ? new sdk.SSEClientTransport(url, { requestInit, fetch })
      : new sdk.StreamableHTTPClientTransport(url, { requestInit, fetch });
  }

  #ended(session: Session, why: string): void {
    if (!session.alive) return;
    session.alive = false;
    session.ended = why;
    if (this.#session === session) this.#session = undefined;
    if (this.#closed) return;
    this.#failed(`the server stopped: ${why}`);
    void session.client.close().catch(() => {});
  }

  #failed(why: string): void {
    this.#failures += 1;
    this.#lastError = why;
    this.#lastFailureAt = Date.now();
    const delay = Math.min(
      this.#options.restartMaxDelayMs,
      this.#options.restartBaseDelayMs * 2 ** (this.#failures - 1),
    );
    this.#nextAttemptAt = Date.now() + delay;
  }

  #exitReason(): string {
    if (this.#flooded !== undefined) return this.#floodText();
    if (this.#framingLost !== undefined) {
      const bound = this.#options.maxLineBytes ?? stdioLineBound(this.#options.maxMessageBytes);
      const which =
        this.#options.maxLineBytes === undefined ? '8 × maxMessageBytes, at least 64 MiB,' : 'maxLineBytes';
      return (
        `it sent a line of over ${bound} bytes without ending it (${which} is the most troupe reads ` +
        'past), so its messages could no longer be told apart and troupe closed the connection'
      );
    }
    if (this.#oversized) {
      return `it sent a message longer than ${this.#options.maxMessageBytes} bytes, the most troupe reads, so troupe closed the connection`;
    }
    return `it exited${this.#stderrTail()}`;
  }

  #floodText(): string {
    return `it sent ${this.#flooded ?? 'too many notifications'}, the most troupe reads, so troupe closed the connection`;
  }

  #stderrTail(): string {
    const tail = this.#stderr.trim();
    return tail === '' ? '' : ` (stderr: ${tail.slice(-500)})`;
  }

  #unavailable(why: string): SystemError {
    return new SystemError('mcp_unavailable', `MCP server \`${this.name}\` is not available: ${why}`, {
      server: this.name,
    });
  }
}

/**
 * The UTF-8 bytes of the line a stdio message was read from, for the bound on the bytes of
 * notifications (characters were counted: text outside ASCII passed the bound at up to 3 times it).
 */
const stdioLineBytes = new WeakMap<object, number>();

/**
 * The UTF-8 bytes of a message a server sent on its own: its stdio line's, or over HTTP those of
 * its JSON again. The SDK parses each event itself and hands on a new object (the schema's), from
 * any of several streams at once, so the event's raw bytes cannot be told to the message they
 * became. Serializing costs about what the parse did, and only until the bound on their bytes is
 * passed: a server streaming large notifications over HTTP for ever was bounded in count only.
 */
function messageBytes(message: object): number {
  const line = stdioLineBytes.get(message);
  if (line !== undefined) return line;
  try {
    return Buffer.byteLength(JSON.stringify(message));
  } catch {
    return 0;
  }
}

/**
 * Cuts a `tools/list` answer to one tool past the MCP_MAX_TOOLS_PER_SERVER troupe takes, before
 * the SDK checks every tool against MCP's schema: 100,000 tools cost 3 s and 100 MB to check, and
 * one malformed tool past the bound made the whole listing fail. The one left over says the list
 * was cut.
 */
function trimToolList(message: unknown): void {
  const tools = (message as { result?: { tools?: unknown } } | undefined)?.result?.tools;
  if (Array.isArray(tools) && tools.length > MCP_MAX_TOOLS_PER_SERVER + 1) {
    tools.length = MCP_MAX_TOOLS_PER_SERVER + 1;
  }
}

/** `promise`, or an Error saying `late` when `deadline` aborts first. */
function raceDeadline<T>(promise: Promise<T>, deadline: AbortSignal, late: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error(late));
    if (deadline.aborted) onAbort();
    deadline.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => deadline.removeEventListener('abort', onAbort));
  });
}

/**
 * What is wrong with an answer the SDK refused as not matching MCP's schema (it rejects with the
 * schema library's error, whose message is a JSON dump of every issue): the first issues, each at
 * its path (`content.0.data: Invalid Base64 string`). Undefined for any other error.
 */
function invalidAnswer(error: unknown): string | undefined {
  const issues = (error as { issues?: unknown } | undefined)?.issues;
  if (!(error instanceof Error) || !Array.isArray(issues) || issues.length === 0) return undefined;
  const described = issues.slice(0, 3).map((issue: { path?: unknown; message?: unknown }) => {
    const path = Array.isArray(issue.path) ? issue.path.join('.') : '';
    return `${path === '' ? '' : `${path}: `}${String(issue.message ?? 'invalid')}`;
  });
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : '';
  const text = `${described.join('; ')}${more}`;
  return text.length > MCP_ERROR_TEXT_MAX_CHARS ? `${text.slice(0, MCP_ERROR_TEXT_MAX_CHARS)}… (cut)` : text;
}

/**
 * An error's message for troupe's own: with the cause a bare `fetch failed` hides (`connect
 * ECONNREFUSED 127.0.0.1:8080`), an HTML error page reduced to its text, and at most
 * MCP_ERROR_TEXT_MAX_CHARS characters.
 */
function errorMessage(error: unknown): string {
  const invalid = invalidAnswer(error);
  let text =
    invalid !== undefined
      ? `the answer is not valid MCP: ${invalid}`
      : error instanceof Error
        ? error.message
        : String(error);
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error && cause.message !== '' && !text.includes(cause.message)) {
    text = `${text} (${cause.message})`;
  }
  text = readableErrorText(text);
  return text.length > MCP_ERROR_TEXT_MAX_CHARS ? `${text.slice(0, MCP_ERROR_TEXT_MAX_CHARS)}… (cut)` : text;
}
