/** The tool contract shared by the registry, the policy, the loop and the supervisor. */
import type { BashConfig } from '../definition/types.ts';

/**
 * JSON Schema object, as accepted by Ajv: draft 2020-12 by default, draft-07 when the schema says
 * so in `$schema`.
 */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** A change to the projection's keyed state. `text: null` removes the key. */
export interface StateUpdate {
  readonly key: string;
  readonly text: string | null;
}

/** A request that the next provider turn runs with no tools and hands its text to `onCapture`. */
export interface CaptureRequest {
  /** Instruction shown to the model for the capture turn. */
  readonly prompt: string;
  /** Receives the captured text; its outcome becomes the tool's final outcome. */
  readonly onCapture: (text: string) => ToolOutcome | Promise<ToolOutcome>;
}

/** What a tool call produced. */
export interface ToolOutcome {
  /** Text the model sees as the tool result. */
  readonly text: string;
  readonly ok: boolean;
  /** Applied to the projection only when `ok`. */
  readonly stateUpdates?: readonly StateUpdate[];
  /** State keys this result displays (it is superseded when those keys update). */
  readonly displayedStateKeys?: readonly string[];
  readonly capture?: CaptureRequest;
  /**
   * A failure that may succeed when tried again (network, lock). `toolConfig.<tool>.retry` retries
   * these, and every exception a tool throws (except a cancellation).
   */
  readonly retryable?: boolean;
  /** Structured result data (e.g. the `complete_task` result object). */
  readonly data?: unknown;
}

/**
 * Checks a tool makes for what a call reaches beyond its arguments, from the agent's permission
 * rules: each returns why the access is refused, or undefined when it is allowed.
 */
export interface ToolGuard {
  /** A file or directory a walk found (`grep`, `glob`, `list_dir`), as an absolute real path. */
  readonly path?: (absolute: string) => string | undefined;
  /** A host an HTTP request goes to, redirects included (`web_fetch`). */
  readonly host?: (host: string) => string | undefined;
}

/** What a tool can see and do while it runs. */
export interface ToolContext {
  readonly signal: AbortSignal;
  /** Absolute working directory; file tools are confined to it. */
  readonly cwd: string;
  readonly agentId: string;
  /** The model's id of this call (absent when a tool is called outside an agent loop). */
  readonly callId?: string;
  /** The agent's bash settings, for `run_terminal_cmd`; troupe's defaults apply when absent. */
  readonly bash?: BashConfig;
  /** What the agent's permission rules refuse beyond the call's own arguments. */
  readonly guard?: ToolGuard;
  /**
   * Values of the agent's settings blocks, by block id (`ctx.settings['acme.weights']?.urgency`):
   * the versions the agent started with, for its whole life. Empty when it has none; absent
   * where no agent runs the tool.
   */
  readonly settings?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /**
   * Would a state update of `key` to `text` (`null`: a removal) fit the agent's input budget? A
   * tool can check before it returns a large state, and return a summary instead. Changes
   * nothing. Always true where no projection is attached (a tool called outside an agent loop).
   */
  readonly fitsState: (key: string, text: string | null) => boolean;
  /**
   * The W3C trace context of this call's `execute_tool` span, when the agent is traced (on the
   * redis engine: the agent's span); undefined otherwise. A tool that calls another service passes
   * it on, so that service's spans join the agent's trace: troupe's MCP tools send it in the
   * `tools/call` request's `_meta`. On the threads engine the first call asks the supervisor (one
   * message each way); the answer is kept for the call. Absent where no agent runs the tool.
   */
  readonly traceContext?: () => Promise<ToolTraceContext | undefined>;
}

/** W3C trace context (https://www.w3.org/TR/trace-context/) of a tool call. */
export interface ToolTraceContext {
  /** `00-<trace id>-<span id>-<flags>`. */
  readonly traceparent: string;
  /** Vendors' trace state, when the span has one. */
  readonly tracestate?: string;
}

/** What a tool's `needsApproval` function can see. */
export interface ApprovalContext {
  readonly agentId: string;
  /** Absolute working directory. */
  readonly cwd: string;
}

/**
 * A tool's approval check. Declared through a method so that, like `execute`, a `Tool<OwnArgs>` is
 * still a `Tool` (method parameters are compared bivariantly).
 */
export type NeedsApproval<Args> = {
  check(args: Args, ctx: ApprovalContext): boolean | Promise<boolean>;
}['check'];

/** A tool the model can call. Names are canonical; overrides map them to model-facing names. */
export interface Tool<Args = Record<string, unknown>> {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  /** Safe under `permissionMode: plan`: it changes nothing outside the agent. */
  readonly readOnly: boolean;
  /** Long-running or background tool: the base prompt mentions background tasks when present. */
  readonly background?: boolean;
  /**
   * Whether a call waits for a person's approval before it runs (docs/permissions.md): `true`
   * for every call, or a function of the validated arguments. A function that throws counts as
   * `true`. `deny` rules still win, and `bypassPermissions` skips it. @default false
   */
  readonly needsApproval?: boolean | NeedsApproval<Args>;
  /**
   * Longest one call may run, in milliseconds, each retry on its own: then `ctx.signal` aborts and
   * the call fails with the result `<tool> did not finish within N ms`, whether or not `execute`
   * stops (a promise that never settles is abandoned). `0`: no limit, for a tool that bounds
   * itself or waits by design (`wait_for_instruction`, `run_terminal_cmd`, MCP tools).
   * @default 600000 (`DEFAULT_TOOL_TIMEOUT_MS`)
   */
  readonly timeoutMs?: number;
  /**
   * Runs the tool with arguments already validated against `parameters`. Throwing is allowed: the
   * toolbox turns an exception into the failed outcome `<tool> failed: <message>`.
   */
  execute(args: Args, ctx: ToolContext): ToolOutcome | Promise<ToolOutcome>;
}

/** Tool as offered to a provider: model-facing names, parameters schema. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
}

/** What prompt templates know about an agent's tools (built by the toolbox). */
export interface PromptTools {
  /** Every registered tool's canonical name -> its model-facing name, or `''` when not admitted. */
  readonly names: Readonly<Record<string, string>>;
  /** Model-facing names of admitted tools marked `background`. */
  readonly background: readonly string[];
}
