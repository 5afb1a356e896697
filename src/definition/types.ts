/** Types of agent definitions: what a definition file resolves to, and what can go wrong. */
import type { BlockRef, PromptRef } from '../blocks/types.ts';
import type { McpServerRef } from '../mcp/config.ts';
import type { ModelSettings } from '../providers/model-settings.ts';
import type { SourcePosition } from './problem-types.ts';

/** Where a definition came from, highest precedence first. */
export type DefinitionSource = 'project' | 'user' | 'compat' | 'builtin';

/**
 * How the body makes the system prompt: `extend` puts it after troupe's base template; `full` renders
 * the body itself as the template, with no base template.
 */
export type PromptMode = 'extend' | 'full';
/**
 * How calls that no permission rule decides are treated (docs/permissions.md): `default` asks before
 * edits, shell commands, web requests and MCP tools; `acceptEdits` also lets edits inside the
 * working directory run; `dontAsk` denies whatever would ask; `plan` admits read-only tools only;
 * `bypassPermissions` lets everything but `deny` rules run, and only where the supervisor opts in.
 */
export type PermissionMode = 'default' | 'acceptEdits' | 'dontAsk' | 'plan' | 'bypassPermissions';

/**
 * Permission rules in Claude Code's syntax (`Bash(npm test:*)`, `Edit(src/**)`, `mcp__github__*`):
 * calls matching `deny` never run, calls matching `ask` wait for a person's decision, calls matching
 * `allow` run without asking. Precedence: deny, then ask, then allow.
 */
export interface PermissionRules {
  readonly allow: readonly string[];
  readonly ask: readonly string[];
  readonly deny: readonly string[];
}
/**
 * The answer style troupe's base template asks for: `concise`, as few words as the task allows, in
 * plain text; `default`, the answer first and then its details, in Markdown. Ignored by `full` prompts.
 */
export type OutputFormat = 'default' | 'concise';

/** Exponential backoff with jitter. */
export interface RetryPolicy {
  readonly maxRetries: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

/** Settings of the agent's shell tool (`run_terminal_cmd`). */
export interface BashConfig {
  /** Seconds before the command's process group is killed. */
  readonly timeoutSecs: number;
  /** Bytes of output kept (its head and tail) when a command prints more. */
  readonly outputByteLimit: number;
  /** Prepended to every command, e.g. `set -euo pipefail;`. */
  readonly cmdPrefix?: string;
}

/**
 * A tool the agent must call successfully to finish. Each turn that ends without it gets `reminder`
 * pushed after `recovery`'s backoff delay, the last reminder forcing the tool; one more miss
 * (`recovery.maxRetries` + 1 in a row) fails the agent with `completion_required`.
 */
export interface CompletionRequirement {
  /** The tool that must succeed before the agent may finish, e.g. `complete_task`. */
  readonly tool: string;
  /** Text pushed to the model when a turn ends without calling the tool. */
  readonly reminder: string;
  readonly recovery: RetryPolicy;
}

/** Settings of one tool of a definition (`toolConfig.<tool>`). */
export interface ToolConfig {
  /**
   * Retries of a call that throws or returns a `retryable` failure; the keys not written take
   * `{ maxRetries: 0, baseDelayMs: 250, maxDelayMs: 4000 }`. For `wait_for_instruction` it bounds
   * the wait instead: each attempt waits up to its backoff delay (no `retry` written: no limit).
   * Refused for `spawn_agent` and `send_instruction` (an `invalid_field` problem), and ignored for
   * them in a definition built in code: a retry of a call whose answer was lost could start a
   * second child or send an instruction twice.
   * @default none: the tool's call is not retried, and wait_for_instruction waits without limit
   */
  readonly retry?: RetryPolicy;
  /**
   * Time limit of one call (each retry on its own), over the tool's own `timeoutMs` (a host
   * tool's too: the supervisor times its call by it); `0` = no limit. Not for
   * `wait_for_instruction`, whose wait `retry` bounds. An orchestration tool is timed by it on the
   * supervisor only: `spawn_agent` is never abandoned (it names the child it started),
   * `send_instruction` and `await_agents` answer what was done (docs/host-channels.md).
   * @default the tool's `timeoutMs`, else 600000 (`DEFAULT_TOOL_TIMEOUT_MS`)
   */
  readonly timeoutMs?: number;
}

/** A fully resolved agent definition: every field has its default filled in. */
export interface AgentDefinition {
  /** Lowercase slug, unique among discovered definitions. */
  readonly name: string;
  readonly description: string;
  /** The Markdown body: the system prompt (extend) or its template (full). */
  readonly body: string;
  readonly promptMode: PromptMode;
  /**
   * Tool entries as written: names (canonical, model-facing or Claude Code's, in any case) and
   * rules such as `Bash(git diff:*)`; `undefined` means every tool.
   */
  readonly tools: readonly string[] | undefined;
  /** Entries that take tools away (names or rules, as in `tools`); they win over `tools`. */
  readonly disallowedTools: readonly string[];
  readonly permissionMode: PermissionMode;
  /** Approval rules of this agent; merged with the supervisor's, the plan's and the command line's. */
  readonly permissions: PermissionRules;
  readonly skills: readonly string[];
  readonly agentsMd: boolean;
  readonly outputFormat: OutputFormat;
  readonly bash: BashConfig;
  /** Canonical tool name -> model-facing name. */
  readonly toolNameOverrides: Readonly<Record<string, string>>;
  /** Canonical tool name -> (canonical parameter name -> model-facing parameter name). */
  readonly paramNameOverrides: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly completionRequirement: CompletionRequirement | undefined;
  readonly toolConfig: Readonly<Record<string, ToolConfig>>;
  /**
   * Model name or alias as written (`default`, `sonnet`, `inherit`, `gpt-4.1`); resolved per
   * provider when the agent is spawned (see `resolveModel` in providers/models.ts).
   */
  readonly model: string;
  /** MCP servers of this agent: names of servers configured elsewhere, or servers of its own. */
  readonly mcpServers: readonly McpServerRef[];
  readonly maxSteps: number;
  readonly enabled: boolean;
  /** JSON Schema for the `complete_task` result. */
  readonly outputSchema: Readonly<Record<string, unknown>> | undefined;
  /**
   * A prompt block that holds the agent's instructions in place of a body
   * (`instructions: { prompt: acme.intake, version: ^1, parameters: {...} }`).
   */
  readonly instructions: PromptRef | undefined;
  /** Settings blocks the agent's prompt and tools read (`settings: [{ id, version }]`). */
  readonly settings: readonly BlockRef[];
  /** Model settings written in the definition; applied over those of {@link modelSettingsBlock}. */
  readonly modelSettings: ModelSettings;
  /** A model-settings block (`modelSettings: { id, version }`). */
  readonly modelSettingsBlock: BlockRef | undefined;
  /** Where the definition was read from. */
  readonly source: DefinitionSource;
  /** Absolute file path, or `builtin:<name>`. */
  readonly path: string;
  /** Keys that troupe does not know, kept as written (forward compatibility). */
  readonly extra: Readonly<Record<string, unknown>>;
  /** 1-based line in the file where the body starts (for template errors). */
  readonly bodyLine: number;
  /**
   * Where tool references were written, by JSON pointer (`/tools/2`, `/toolConfig/grep`), so a
   * spawn can report problems with them at file:line:column. Not part of the definition's hash.
   */
  readonly sourcePositions?: Readonly<Record<string, SourcePosition>>;
  /**
   * The definition file's text, as read, when the definition was parsed from text. An agent's
   * Started event records it so a resumed agent runs exactly this definition. Not hashed.
   */
  readonly text?: string;
  /**
   * The content hash (`definitionHash`) of the definition `text` reads as, set with it by the
   * parser. A definition whose own hash differs was changed after it was read (as
   * `{ ...loaded, name, tools }` is): its Started event records its content rather than the text,
   * so that a restarted or resumed agent runs it, not the file it came from. Not hashed.
   */
  readonly textHash?: string;
}

export type { DefinitionProblem, ProblemCode, SourcePosition } from './problem-types.ts';
