/** Bounds and defaults of MCP connections, in one place (docs/prompt-and-tools.md lists them). */

/** Server names: they become part of tool names (`mcp__<server>__<tool>`). */
export const MCP_SERVER_NAME_PATTERN = /^[A-Za-z0-9_-]{1,48}$/;

/**
 * Bytes of `.mcp.json` read at most (real ones are a few KB): a stray large file there is a problem
 * saying so, not a stall. At most one byte more is read, whatever the file does meanwhile.
 */
export const MCP_CONFIG_BYTE_LIMIT = 1024 * 1024;

/** Time to start a server (spawn or HTTP handshake) and finish MCP initialization. */
export const MCP_CONNECT_TIMEOUT_MS = 30_000;

/** Time for the whole `tools/list` listing (every page), after `initialize` was answered. */
export const MCP_LIST_TIMEOUT_MS = 30_000;

/** Pages of `tools/list` read at most (a server that pages forever is cut off). */
export const MCP_MAX_LIST_PAGES = 20;

/** Tools taken from one server at most. */
export const MCP_MAX_TOOLS_PER_SERVER = 500;

/**
 * Bytes of one tool's `inputSchema`, serialized as JSON. Real servers' schemas take a few KB; a
 * larger one is not offered (a 5.9 MB schema took 15 s and 1.25 GB to compile and count, and then
 * filled the input budget of every agent admitted to the server, even one that never called it).
 */
export const MCP_MAX_SCHEMA_BYTES = 256 * 1024;

/**
 * Bytes of all the `inputSchema`s troupe takes from one server, serialized as JSON: tools past the
 * bound, in the server's order, are not offered.
 */
export const MCP_MAX_SERVER_SCHEMA_BYTES = 2 * 1024 * 1024;

/**
 * Time one tool call may take. Progress notifications from the server do not extend it: a call
 * that never answers must end.
 */
export const MCP_CALL_TIMEOUT_MS = 600_000;

/**
 * Bytes one message from a server may have (a stdio line; over HTTP a JSON body or one server-sent
 * event), unless its settings say `maxMessageBytes`. Codex bounds a stdio line to 8 MiB too, the
 * SDK to 10 MiB. troupe keeps {@link MCP_RESULT_CHAR_LIMIT} characters of a result and describes
 * images and blobs without passing them on, so what a longer answer would add is cut anyway,
 * while reading it costs about five times its size in heap (the bytes, the text, the parsed
 * object): a 60 MB answer took 300 MB of the agent's thread. A longer stdio answer fails its call
 * (`mcp_call_failed`) as it streams in, without being held; the server goes on.
 */
export const MCP_STDIO_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/**
 * How many times `maxMessageBytes` one stdio line may run to (and at least
 * {@link MCP_STDIO_MIN_LINE_BOUND_BYTES}) before troupe takes the framing as lost: 64 MiB by
 * default. A line over `maxMessageBytes` is read past without being held, looking for its id (an
 * SDK server writes it after the result); one that goes on past this bound (a server writing one
 * endless line) closes the connection, failing every call in flight at once (`mcp_server_died`,
 * saying why) instead of letting them wait out the call time limit while nothing after the line
 * can be read.
 */
export const MCP_STDIO_LINE_BOUND_FACTOR = 8;

/**
 * The least bound on one stdio line read past, whatever `maxMessageBytes` is: a server given a
 * small `maxMessageBytes` that answers a few MiB only fails that call, and keeps its connection.
 */
export const MCP_STDIO_MIN_LINE_BOUND_BYTES = 64 * 1024 * 1024;

/** The bound on one stdio line read past for `maxMessageBytes` (see MCP_STDIO_LINE_BOUND_FACTOR). */
export function stdioLineBound(maxMessageBytes: number): number {
  return Math.max(maxMessageBytes * MCP_STDIO_LINE_BOUND_FACTOR, MCP_STDIO_MIN_LINE_BOUND_BYTES);
}

/**
 * The largest `maxMessageBytes` a server's settings may give: a longer message could not be held
 * as one string (V8 strings hold at most ~512 Mi characters).
 */
export const MCP_MAX_MESSAGE_BYTES_CEILING = 256 * 1024 * 1024;

/** Characters of a tool result kept; the rest is cut with a note saying how much was left out. */
export const MCP_RESULT_CHAR_LIMIT = 100_000;

/**
 * Notifications (and requests) a server may send in one second. A busy server sends a few dozen
 * (progress, log messages); one sending `tools/list_changed` in a loop held the agent's thread, and
 * every other agent on it, parsing. Past the bound troupe closes the connection (the server is
 * restarted for the next call, after the usual backoff).
 */
export const MCP_MAX_NOTIFICATIONS_PER_SECOND = 1000;

/**
 * Notifications (and requests) a server may send in the last 60 seconds: 100 a second on average.
 * The bound per second alone let a server send 999 a second for as long as the connection lived.
 * troupe asks for no progress and sets no log level, so a server has little to send unasked.
 */
export const MCP_MAX_NOTIFICATIONS_PER_MINUTE = 6000;

/**
 * UTF-8 bytes of the notifications (and requests) a server may send in the last 60 seconds, over stdio
 * or HTTP: a few large ones a minute each cost a parse of up to a message's bound.
 */
export const MCP_MAX_NOTIFICATION_BYTES_PER_MINUTE = 64 * 1024 * 1024;

/**
 * Restarts after a server died before calls fail at once ("gave up"). Reset by a call that
 * succeeds; a server given up on is tried again {@link MCP_RESTART_MAX_DELAY_MS} after its last
 * failure (a server the user restarted, or one that was down for a while, comes back).
 */
export const MCP_MAX_RESTARTS = 5;

/** First wait before restarting a dead server; doubles per restart. */
export const MCP_RESTART_BASE_DELAY_MS = 500;

/** Cap on the wait before a restart. */
export const MCP_RESTART_MAX_DELAY_MS = 30_000;

/** Time a stdio server gets to exit after its stdin is closed before it is killed. */
export const MCP_CLOSE_GRACE_MS = 2_000;

/**
 * How often, on POSIX, a stdio server's process group is looked at after SIGTERM to learn that
 * every process in it has ended (within {@link MCP_CLOSE_GRACE_MS}, then SIGKILL).
 */
export const MCP_GROUP_POLL_MS = 25;

/**
 * Time one `taskkill` (Windows: ending a stdio server's process tree) is waited for; one still
 * running after it is killed, and closing goes on.
 */
export const MCP_TASKKILL_TIMEOUT_MS = 5_000;

/**
 * Bytes of the process listing (each process's id and its parent's) read at most when a stdio
 * server's process tree is recorded on Windows; a longer listing is cut and only what was read is
 * used. A line is about a dozen bytes: a machine with 80,000 processes fits.
 */
export const MCP_PROCESS_LIST_MAX_BYTES = 1024 * 1024;

/**
 * Characters of a server's or transport's error message kept in troupe's own messages (an HTTP
 * server's error page, say); the rest is cut.
 */
export const MCP_ERROR_TEXT_MAX_CHARS = 500;
