/** Defaults and fixed strings of the audit journal. Shared defaults live in ../constants.ts. */

/** `prev` of the first event of a journal: there is no previous event to hash. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * Default fsync policy of a journal file. `always` makes every appended event durable before
 * `append` returns, which is what resume relies on to never run a finished tool call twice.
 */
export const DEFAULT_FSYNC_POLICY = 'always';

/**
 * Most characters a batching journal writer holds before writing them, whatever barrier comes
 * next: a turn that appends a lot (a resume recording many interrupted calls, a long tool result)
 * still writes in bounded pieces.
 */
export const JOURNAL_BATCH_MAX_CHARS = 256 * 1024;

/**
 * Bytes one journal line may hold when `troupe show`, `troupe report`, `troupe verify`, `troupe
 * resume` or `troupe replay` reads it (`readJournal`): a longer line fails the read with UserError
 * `journal_line_too_long`, naming the file, the line and the bound, before it is held (a 200 MB
 * line was read whole, then parsed). Far above any line troupe writes: a tool result is at most
 * 4,000,000 characters (`MAX_TOOL_RESULT_CHARS`), a spawn input 4 MiB, each at most six times
 * longer JSON-escaped.
 */
export const MAX_JOURNAL_LINE_BYTES = 64 * 1024 * 1024;

/**
 * Attempt ids a retry's `Started.forkedFrom` keeps at most: the newest ones (the attempt it was
 * forked from first). Each retry of an entry adds one, so without a bound the copied `Started`
 * line, and the adoption search under each id, grew with every retry. The children of an attempt
 * older than those kept are not searched for when a retry is resumed.
 */
export const MAX_FORKED_FROM_IDS = 1000;

/** How often the `interval` policy flushes appended events to disk. */
export const DEFAULT_FSYNC_INTERVAL_MS = 1000;

/** What a redacted secret is replaced by. It matches none of the secret patterns, so redaction is idempotent. */
export const REDACTED = '[REDACTED]';

/**
 * Result text the loop records for a tool call that was started but has no recorded result when an
 * agent resumes: the process died while it ran, so whether it took effect is unknown.
 */
export const INTERRUPTED_TOOL_RESULT =
  'This tool call was interrupted (the agent was restarted) and it is not known whether it took effect. Check before calling it again.';

/**
 * Deepest nesting of arrays and objects a journal event may hold. The canonical writer recurses, and
 * a tool result nested thousands of levels deep (JSON.parse accepts it) overflowed the stack; it is
 * now a typed `journal_unserializable` failure of that one agent. Real data nests a few levels.
 */
export const MAX_JSON_DEPTH = 512;

/**
 * Distinct configured credentials a thread masks literally (`registerSecretValues`): provider API
 * keys and credential headers, MCP servers' credential env variables and headers (two values each,
 * with and without a `Bearer ` scheme). A process with hundreds of token-bearing servers stays far
 * below it; registering more throws `too_many_secrets` rather than leave one unmasked.
 */
export const MAX_LITERAL_SECRETS = 4096;
