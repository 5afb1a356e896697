/** Defaults that change behaviour, in one place. */

/** Model requests (steps) an agent may make per task when its definition does not say. */
export const DEFAULT_MAX_STEPS = 32;
/** Hard cap on model requests per agent, whatever a definition or the limits say. */
export const HARD_MAX_STEPS = 250;
/**
 * Input + output tokens an agent may spend when its limits do not say (`maxTotalTokens`; 0 means
 * unlimited). Enough for a long task, and it stops a runaway agent before it costs much: about
 * $2 at gpt-4.1 prices.
 */
export const DEFAULT_MAX_TOTAL_TOKENS = 1_000_000;
/**
 * Input + output tokens a whole `troupe fanout` or `troupe demo` run may spend, over all its
 * agents, unless the plan or the command line says otherwise (0 means unlimited).
 */
export const DEFAULT_RUN_MAX_TOTAL_TOKENS = 10_000_000;
/**
 * Times in a row the loop asks the model to continue an answer cut off by its output limit
 * (`finish_reason: length`, `max_tokens`) before the agent fails with `truncated`.
 */
export const DEFAULT_TRUNCATION_RETRIES = 1;
/** What the model is told after an answer was cut off by its output limit. */
export const TRUNCATION_NOTICE =
  'Your last answer was cut off by the output limit. Continue from where it stopped, more briefly; if you were calling a tool, call it again with shorter arguments.';
/** Tokens kept free for the provider's protocol framing (roles, tool schemas, separators). */
export const PROTOCOL_TOKEN_RESERVE = 4096;
/** Default bash tool timeout. */
export const DEFAULT_BASH_TIMEOUT_SECS = 120;
/** Default cap on captured bash output. */
export const DEFAULT_BASH_OUTPUT_BYTE_LIMIT = 200_000;
/**
 * Largest `bash.outputByteLimit` a definition may set: half of {@link MAX_TOOL_RESULT_CHARS}, so a
 * command's output and its notes fit a tool result (as `WEB_FETCH_MAX_CHARS_LIMIT`). It was
 * unbounded: `outputByteLimit: 1000000000000` kept ~1 GB of `head -c 2G /dev/zero` and crashed the
 * thread turning it into text past V8's longest string (512 MiB).
 */
export const MAX_BASH_OUTPUT_BYTE_LIMIT = 2_000_000;
/**
 * Largest `bash.timeoutSecs` a definition may set: the longest timer delay (2,147,483,647 ms) in
 * seconds, about 24.8 days; past it Node fires a timer at once.
 */
export const MAX_BASH_TIMEOUT_SECS = 2_147_483.647;
/**
 * Largest `maxRetries` of a definition's retry policy (`completionRequirement.recovery`,
 * `toolConfig.<tool>.retry`): far past any useful policy, and it bounds a loop of instant retries
 * (`baseDelayMs: 0`) of a tool that keeps failing. A retry policy's delays are at most
 * {@link MAX_TIMER_MS}.
 */
export const MAX_DEFINITION_RETRIES = 1000;
/**
 * Largest `restart.maxRetries` (and `maxBystanderRestarts`) of a Supervisor: far past any useful
 * restart cap, and it bounds the restarts of an agent that keeps killing its thread
 * (`restart.baseDelayMs: 0` restarts at once). `1.5` or `1e300` was taken as is before.
 */
export const MAX_RESTART_RETRIES = 1000;
/** Default completion-recovery retry policy. */
export const DEFAULT_RECOVERY = { maxRetries: 3, baseDelayMs: 250, maxDelayMs: 4000 } as const;
/**
 * How long one call of a tool may run when the tool does not say (`Tool.timeoutMs`): then its
 * signal aborts and the call fails with a result that says so, whether or not the tool stops. A
 * tool module's promise that never settled held its agent for ever (`troupe fanout` never ended).
 * As long as an MCP call's bound (`MCP_CALL_TIMEOUT_MS`).
 */
export const DEFAULT_TOOL_TIMEOUT_MS = 600_000;
/** The longest delay a timer takes (2^31 - 1 ms, about 24.8 days); a longer one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;
/** Default per-tool retry policy (no retries). */
export const DEFAULT_TOOL_RETRY = { maxRetries: 0, baseDelayMs: 250, maxDelayMs: 4000 } as const;
/** Size cap for one AGENTS.md file in a prompt. */
export const AGENTS_MD_BYTE_LIMIT = 32_768;
/**
 * Largest SKILL.md read (1 MiB, as a definition file): a longer one is skipped with a process
 * warning (`TROUPE_SKILL_TOO_LARGE`) naming it and this bound; at most one byte past it is read.
 */
export const SKILL_BYTE_LIMIT = 1_048_576;

/**
 * Bytes read from the top of a SKILL.md over {@link SKILL_BYTE_LIMIT} for its frontmatter (64 KiB),
 * so that it is known by its `name` (a definition pre-loading it fails as too large, not unknown).
 * A frontmatter that does not close within them leaves the skill known by its folder's name.
 */
export const SKILL_FRONTMATTER_BYTE_LIMIT = 65_536;

/** Marker left in history when a state it displayed has been updated. */
export const SUPERSEDED_MARKER =
  '[Tool output was displayed here, but has since been updated and now appears elsewhere in the context]';
/** Marker left in history when a state it displayed has been removed. */
export const REMOVED_MARKER = '[Tool output was displayed here, but is no longer current]';
/** Refusal for tool calls after a state update within the same slice. */
export const SLICE_REFUSAL =
  'A state update is waiting to be re-rendered. End this slice before calling another tool.';

/**
 * Largest recorded journal a replay reads (`troupe replay`, `Supervisor.replay`): its recording
 * travels with the replayed agent to its thread or worker. A bigger one fails that agent with
 * `invalid_request` (code `replay_journal_too_large`).
 */
export const MAX_REPLAY_JOURNAL_BYTES = 64 * 1024 * 1024;
/**
 * Largest instruction (UTF-8 bytes) `instruct`, `handle.send`, a session's `send` and
 * `send_instruction` take: each is journalled twice (the `Instructed` event and the
 * `wait_for_instruction` result). A bigger one is refused with UserError `instruction_too_large`.
 */
export const MAX_INSTRUCTION_BYTES = 1024 * 1024;
/**
 * Largest spawn input (UTF-8 bytes of the task, every context section and the metadata as JSON) `spawn`,
 * `fanOut`, a session and `spawn_agent` take: about a million tokens, more than a model's input
 * budget, so a bigger one could only fail at its first request, after being journalled (and on
 * the redis engine copied into its job, up to `maxBatchSize` agents per write). A bigger one is
 * refused with UserError `spawn_input_too_large`.
 */
export const MAX_SPAWN_INPUT_BYTES = 4 * 1024 * 1024;
/**
 * Characters a tool's outcome may hold (its text and its state updates' texts): about a million
 * tokens, the largest context window troupe knows (gpt-4.1's), so a longer result could only be
 * withheld from the model. A longer one fails the call without being kept: a tool module returning
 * 50 MB took ~470 MB of its thread's heap (the journal line, its masking, the projection's count)
 * and wrote a 50 MB journal line, and a few such agents on one thread ran it out of memory.
 */
export const MAX_TOOL_RESULT_CHARS = 4_000_000;
/** Characters of a tool's output an `agent:tool` completed event previews. */
export const TOOL_OUTPUT_PREVIEW_CHARS = 400;
/**
 * How long a tool call waits for a person's approval before its request times out (and is denied,
 * unless `onTimeout: 'allow'`). 0 means no limit.
 */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 600_000;

/**
 * Host tool calls whose outcome (or promise, while they run) the supervisor keeps per agent, by the
 * model's call id, so an agent restarted after its thread or worker died gets the outcome of a call
 * that was cut off instead of running it again. The oldest are dropped first; all of an agent's go
 * when it ends.
 */
export const MAX_KEPT_HOST_CALLS = 64;
/**
 * Journals a parent resumed in a new supervisor (`troupe resume`, `spawn(..., { resume: true })`)
 * examines at most, looking for the child of a `spawn_agent` call its journal shows cut off: the
 * child's id is in no result of the parent's, only in the child's own `Started`. Only the first
 * line of each is read (see {@link MAX_ADOPTION_SCAN_BYTES}), on every resume (for the unfinished
 * children it and its finished descendants do not adopt, to end them too). It
 * counts the journals naming that parent (each journal's ids are read once per engine,
 * src/engines/threads/child-index.ts, src/engines/redis/child-index.ts). `troupe resume`'s
 * search for nested agents has no count bound: it reads the ids of every journal's first line
 * (bounded by {@link MAX_STARTED_HEAD_BYTES}) once and keeps only ids.
 */
export const MAX_ADOPTION_SCAN_JOURNALS = 10_000;
/**
 * Bytes of each journal's first line that search parses whole at most (to match a child by the
 * call's `agent` and `task` in a journal without `spawnCallId`): a longer line is read for its ids
 * only (see {@link MAX_STARTED_HEAD_BYTES}).
 */
export const MAX_ADOPTION_SCAN_BYTES = 1024 * 1024;
/**
 * Bytes of a journal's first line read at most to learn which agent spawned it (its `parentId` and
 * `spawnCallId`, src/journal/started-head.ts), in a search for a resumed agent's children or for
 * `troupe resume`'s orphans. Only the members sorted before `spawnCallId` are read (the definition,
 * context and metadata, not the task or system prompt), in constant memory: a spawn input is at
 * most {@link MAX_SPAWN_INPUT_BYTES}, which JSON escaping can make six times longer. A journal whose
 * ids lie past it is named in a warning, never passed over silently.
 */
export const MAX_STARTED_HEAD_BYTES = 64 * 1024 * 1024;
/**
 * Items with an agent in both runs up to which `troupe compare` reads their journals to compare
 * tool calls, unless told (`--tool-calls`, `--no-tool-calls`). The tool calls are only in the
 * journals: two 20,000-item runs meant reading 40,000 of them (about 21 s) for a table whose
 * outcomes, scores, outputs, tokens and costs are all in `results.jsonl`.
 */
export const COMPARE_TOOL_CALL_ITEMS = 1000;
/**
 * Characters of each item's output (its result as JSON, its answer, or why it failed) that
 * `troupe compare` keeps (`ItemSide.output`, then `…`); whether two outputs are the same is decided
 * by the digest of the whole text (`ItemSide.outputDigest`). Kept whole, two runs of 100,000
 * 2.5 KB results held every output twice over (678 MB at the peak, more with `--json`).
 */
export const COMPARE_OUTPUT_CHARS = 200;
/**
 * Characters of `troupe compare --json`'s document gathered into one write (an item at a time,
 * each write ending a line). Printed whole, two runs of 100,000 items (a 242 MB document) peaked
 * at 2.0 GB of RSS: a masked copy of the comparison, one indented string and its masked copy.
 */
export const COMPARE_JSON_PIECE_CHARS = 64 * 1024;
/**
 * A cost difference in USD below this between an agent's receipts and its outcome is float
 * rounding (the same receipts summed in another order), not a request a count missed: an agent's
 * end tops `runLimits` and the usage sink up only past it.
 */
export const COST_ROUNDING_USD = 1e-9;
