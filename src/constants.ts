/** Defaults that change behaviour, in one place. */

/** Rounds an agent may take per task when its definition does not say. */
export const DEFAULT_MAX_STEPS = 32;
/** Hard cap on rounds, whatever a definition says. */
export const HARD_MAX_STEPS = 250;
/** Tokens kept free for the provider's protocol framing (roles, tool schemas, separators). */
export const PROTOCOL_TOKEN_RESERVE = 4096;
/** Default bash tool timeout. */
export const DEFAULT_BASH_TIMEOUT_SECS = 120;
/** Default cap on captured bash output. */
export const DEFAULT_BASH_OUTPUT_BYTE_LIMIT = 200_000;
/** Default completion-recovery retry policy. */
export const DEFAULT_RECOVERY = { maxRetries: 3, baseDelayMs: 250, maxDelayMs: 4000 } as const;
/** Default per-tool retry policy (no retries). */
export const DEFAULT_TOOL_RETRY = { maxRetries: 0, baseDelayMs: 250, maxDelayMs: 4000 } as const;
/** Size cap for one AGENTS.md file in a prompt. */
export const AGENTS_MD_BYTE_LIMIT = 32_768;

/** Marker left in history when a state it displayed has been updated. */
export const SUPERSEDED_MARKER =
  '[Tool output was displayed here, but has since been updated and now appears elsewhere in the context]';
/** Marker left in history when a state it displayed has been removed. */
export const REMOVED_MARKER = '[Tool output was displayed here, but is no longer current]';
/** Refusal for tool calls after a state update within the same slice. */
export const SLICE_REFUSAL =
  'A state update is waiting to be re-rendered. End this slice before calling another tool.';
