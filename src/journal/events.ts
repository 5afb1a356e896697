/**
 * The audit events an agent leaves behind: one discriminated union on `type`. The loop writes the
 * bodies ({@link AuditEventInput}); a journal sink adds the chain fields ({@link ChainFields}) that
 * make the record tamper-evident.
 *
 * Two units, each named once: a **step** is one model request (what `maxSteps` counts, numbered
 * from 1 across the agent); a **round** is one render of the projection and the provider turn
 * sent on it (numbered from 1), which may take several steps while the model calls tools.
 */
import { createHash, type Hash } from 'node:crypto';
import type { PinnedBlock } from '../blocks/types.ts';
import type { DefinitionSource } from '../definition/types.ts';
import type { SerializedError } from '../errors.ts';
import type { AgentLimits, FailureReason } from '../loop/types.ts';
import type { ModelSettings } from '../providers/model-settings.ts';
import type { Receipt, StopReason, ToolChoice, Usage } from '../providers/types.ts';
import type { ReplayCounts, ReplayDisposition, ReplayRef } from '../replay/types.ts';
import type { StateUpdate, ToolSpec } from '../tools/types.ts';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import { maskingVersion, redactStrings, redactText } from './redact.ts';

/** Fields every journalled event carries, assigned by the sink. */
export interface ChainFields {
  /** 0-based position in the agent's journal. */
  readonly seq: number;
  /** ISO 8601 time the event was appended. */
  readonly ts: string;
  /** `hash` of the previous event; {@link GENESIS_HASH} (64 zeros) for the first. */
  readonly prev: string;
  /** SHA-256 (hex) of this event's canonical JSON without the `hash` member. */
  readonly hash: string;
}

/** The agent started: everything a verifier needs to re-render round 1. */
export interface Started {
  readonly type: 'Started';
  readonly agentId: string;
  readonly parentId?: string;
  /**
   * The id of the parent's `spawn_agent` call that started this agent (absent for an agent the
   * program spawned, and in older journals): a parent resumed in a new supervisor finds
   * the child of a call that was cut off by it.
   */
  readonly spawnCallId?: string;
  /**
   * In a retry's journal (a fork, src/journal/fork.ts): the attempts it continues, newest first,
   * the one it was forked from and then that one's own `forkedFrom`. The children an earlier attempt
   * spawned name that attempt as their parent, so a resumed retry searches under each of these ids
   * (absent in a first attempt's journal, and in forks written before it was recorded). At most the
   * newest MAX_FORKED_FROM_IDS (1,000) are kept: an older attempt's children are not searched for.
   */
  readonly forkedFrom?: readonly string[];
  /**
   * The definition as run, pinned: a resumed or restarted agent runs this text (or content), never
   * the file as it is by then. `hash` is `definitionHash` of the definition.
   */
  readonly definition: StartedDefinition;
  /** Every block the agent runs with, each range resolved to one version (absent when none). */
  readonly blocks?: readonly PinnedBlock[];
  /** Values of the settings blocks, by block id: what prompts and tools read (absent when none). */
  readonly settings?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /**
   * The model settings sent with every request, resolved from the supervisor's defaults, the
   * definition (and its model-settings block), the plan and the spawn (absent when none are set).
   * Every InferenceSubmitted `inputHash` covers them.
   */
  readonly modelSettings?: ModelSettings;
  readonly provider: string;
  readonly model: string;
  readonly contextWindow: number;
  readonly maxInputTokens: number;
  /** The projection's fixed context sections, in order. */
  readonly context: readonly string[];
  readonly task: string;
  /** Caller metadata. Values under secret-looking keys are redacted. */
  readonly metadata: Readonly<Record<string, unknown>>;
  /** The assembled system prompt, exactly as sent every round. */
  readonly systemPrompt: string;
  /** Every tool the agent may be offered (model-facing names); rounds name the subset they offered. */
  readonly toolSpecs: readonly ToolSpec[];
  /**
   * What was wrong with the agent's tools when it started: `tools` entries that match no tool
   * (`unknown_tool`, with where they are written), MCP servers that could not be reached.
   */
  readonly warnings?: readonly StartedWarning[];
  /** The limits in force: the caller's, with the defaults filled in (absent in older journals). */
  readonly limits?: AgentLimits;
  /** Warnings known at the start, e.g. a cost budget that cannot be enforced for an unpriced model. */
  readonly notices?: readonly string[];
  /**
   * Journal format: 3 since troupe 0.3, where every model request (step) has its own
   * InferenceSubmitted and ProviderReceipt; 2 in troupe 0.2 (one of each per round; ToolCall and
   * ToolResult imply their projection changes); absent in format 1 journals, which also wrote
   * those changes as HistoryAppended and StateChanged events.
   */
  readonly format?: number;
  /**
   * The agent replays a recorded one (`troupe replay`, `Supervisor.replay`): its tool calls were
   * answered from that recording (see src/replay/replay-calls.ts), and a resume needs it again.
   */
  readonly replay?: ReplayRef;
  /**
   * The agent is a session (`Supervisor.session`, `troupe chat`): each instruction is a user
   * message, answered by one turn (TurnAnswered), and the agent then waits for the next.
   */
  readonly session?: boolean;
}

/** The definition a Started event records. */
export interface StartedDefinition {
  readonly name: string;
  /** SHA-256 (hex) of the definition's content (`definitionHash`). */
  readonly hash: string;
  readonly path?: string;
  /** Where the definition was found; its text is read again the same way (strict or lenient). */
  readonly source?: DefinitionSource;
  /** The definition file's full text, as read (absent in journals before troupe 0.4). */
  readonly text?: string;
  /** For a definition built in code (no text): its content, exactly what `hash` hashes. */
  readonly content?: Readonly<Record<string, unknown>>;
}

/** One problem an agent started with; `file`/`line`/`column` say where it is written, when known. */
export interface StartedWarning {
  readonly code: string;
  readonly message: string;
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
  /** JSON pointer into the definition's frontmatter. */
  readonly path?: string;
}

/** A model request (a step) is about to be sent. */
export interface InferenceSubmitted {
  readonly type: 'InferenceSubmitted';
  readonly agentId: string;
  readonly round: number;
  /** The step: 1-based number of this model request across the agent (absent before format 3). */
  readonly step?: number;
  /**
   * 1-based position of the request in its round (absent before format 3, where each round
   * recorded only its first request). Request 1 sends the round's render; a later one continues
   * the turn in the provider's protocol with the model's calls and the results sent back.
   */
  readonly request?: number;
  /**
   * SHA-256 of the exact input: {@link hashInput} of the system prompt, the round's render and
   * the tools for request 1; {@link hashContinuation}, which adds the history entries the round
   * has added since, for a later request.
   */
  readonly inputHash: string;
  readonly estimatedTokens: number;
  /** Model-facing names of the tools offered this turn, in the order offered (`[]` for a capture turn). */
  readonly tools: readonly string[];
  readonly toolChoice?: ToolChoice;
  /** The turn is a freeform capture for the tool call `captureFor`. */
  readonly captureFor?: string;
  /**
   * The model settings sent with this request (absent when none are set): the same for every
   * request of an agent, pinned in Started, and covered by `inputHash`.
   */
  readonly modelSettings?: ModelSettings;
}

/** The model called a tool. */
export interface ToolCall {
  readonly type: 'ToolCall';
  readonly agentId: string;
  readonly round: number;
  readonly callId: string;
  /** Canonical tool name. */
  readonly name: string;
  /** The name the model used (after toolNameOverrides). */
  readonly modelName: string;
  /** Parsed arguments (canonical parameter names); absent when they did not parse. */
  readonly args?: Readonly<Record<string, unknown>>;
  /** The raw argument text, recorded when it did not parse. */
  readonly rawArgs?: string;
}

/** A tool call finished (or was refused). */
export interface ToolResult {
  readonly type: 'ToolResult';
  readonly agentId: string;
  readonly round: number;
  readonly callId: string;
  readonly name: string;
  readonly ok: boolean;
  /** False when the result did not fit the budget and the model got the short failure text instead. */
  readonly projectionAccepted: boolean;
  /** The exact result text, whether or not it reached the projection. */
  readonly text: string;
  readonly stateUpdates: readonly StateUpdate[];
  readonly displayedStateKeys: readonly string[];
  /** The call was answered with a refusal (slice rule, capture pending...) and never executed. */
  readonly refused?: boolean;
  /** Structured result data, e.g. the `complete_task` result object. */
  readonly data?: unknown;
  /**
   * In a replay, how the call was answered: from its recording (`recorded`, nothing ran), by
   * running a read-only tool (`live`), or not at all (`refused`). Absent outside replays and for
   * the tools a replay passes through (`complete_task`, `wait_for_instruction`, orchestration).
   */
  readonly replay?: ReplayDisposition;
}

/**
 * Accounting for one model request (format 3; one per round before). `receipt.usage.estimated`
 * marks counts troupe estimated because the provider reported none.
 */
export interface ProviderReceipt {
  readonly type: 'ProviderReceipt';
  readonly agentId: string;
  readonly round: number;
  /** The step this receipt accounts for (absent before format 3). */
  readonly step?: number;
  readonly receipt: Receipt;
  /** Absent when the request failed. */
  readonly stopReason?: StopReason;
  /** The error code when the request failed. */
  readonly errorCode?: string;
}

/** What kind of text went into the projection history. */
export type HistoryKind =
  | 'tool_call'
  | 'tool_result'
  | 'reminder'
  | 'capture'
  | 'capture_prompt'
  | 'continuation'
  | 'assistant'
  | 'user'
  | 'note';

/** An entry was pushed to the projection history, exactly as the projection holds it. */
export interface HistoryAppended {
  readonly type: 'HistoryAppended';
  readonly agentId: string;
  readonly round: number;
  readonly text: string;
  /** State keys this entry displays. */
  readonly displayedKeys: readonly string[];
  readonly kind?: HistoryKind;
  readonly callId?: string;
}

/** A keyed state of the projection was replaced (`text`) or removed (`null`). */
export interface StateChanged {
  readonly type: 'StateChanged';
  readonly agentId: string;
  readonly key: string;
  readonly text: string | null;
  readonly round?: number;
  readonly callId?: string;
}

/** The agent parked on `wait_for_instruction`, asking for instruction number `index` (0-based). */
export interface Waiting {
  readonly type: 'Waiting';
  readonly agentId: string;
  readonly callId: string;
  readonly index: number;
}

/** The agent received instruction number `index`; a resumed agent asks for the next one. */
export interface Instructed {
  readonly type: 'Instructed';
  readonly agentId: string;
  readonly index: number;
  readonly text: string;
  /** The `wait_for_instruction` call it answered. */
  readonly callId?: string;
}

/**
 * A session answered user message `turn` (0-based: the instruction it received): with the model's
 * text, or a `complete_task` result. The session then waits for message `turn + 1`.
 */
export interface TurnAnswered {
  readonly type: 'TurnAnswered';
  readonly agentId: string;
  readonly turn: number;
  /** The answer text (the JSON of the result when it came through complete_task). */
  readonly answer: string;
  /** The `complete_task` result, when the turn ended with one. */
  readonly result?: unknown;
}

/**
 * A session's turn for user message `turn` was cancelled before it ended (Ctrl-C in `troupe chat`,
 * `AgentSession.cancelTurn`): the request and tools in flight were aborted, a note saying so was
 * added to the history, and the session waits for message `turn + 1`, its history, keyed states
 * and budgets kept.
 */
export interface TurnCancelled {
  readonly type: 'TurnCancelled';
  readonly agentId: string;
  readonly turn: number;
  /** Why, as the canceller said it. */
  readonly reason: string;
}

/**
 * A tool call waits for a person's decision (see docs/permissions.md). The call's ToolCall comes
 * first; its ApprovalDecided (and then its ToolResult) follow. A resumed agent waits again for the
 * same `requestId`, never asking anew.
 */
export interface ApprovalRequested {
  readonly type: 'ApprovalRequested';
  readonly agentId: string;
  readonly round: number;
  readonly callId: string;
  readonly requestId: string;
  /** Canonical tool name. */
  readonly name: string;
  readonly modelName: string;
  /** The arguments as the model gave them (model-facing parameter names). */
  readonly args: Readonly<Record<string, unknown>>;
  /**
   * SHA-256 of the canonical JSON of `args` as journalled (masked). Journals written before
   * `argsMasked` existed hold the hash of the arguments before masking.
   */
  readonly argsHash: string;
  /** Masking changed `args`: they are not the arguments the model gave (absent: unchanged). */
  readonly argsMasked?: true;
  /** The rule that asked (an `ask` rule as written, or the tool's name for a mode or `needsApproval` ask). */
  readonly rule: string;
  readonly reason: string;
  /** Epoch ms at which the request times out; null = no limit. */
  readonly deadline: number | null;
}

/**
 * The decision on a tool call, journalled before the tool runs. Written for every decided
 * ApprovalRequested, and for calls a permission rule or mode denied without asking (no
 * `requestId`). An approved call without a ToolResult was cut off by a crash and is recorded as
 * interrupted, never run again; a denied one is answered with its denial, never run.
 */
export interface ApprovalDecided {
  readonly type: 'ApprovalDecided';
  readonly agentId: string;
  readonly round: number;
  readonly callId: string;
  /** Absent for a denial without a request (a `deny` rule, `dontAsk`). */
  readonly requestId?: string;
  readonly name: string;
  readonly approved: boolean;
  /** `person`, `rule`, `timeout`, `unattended` or `policy` (see ApprovalDecider). */
  readonly by: string;
  readonly decider?: string;
  readonly reason?: string;
  readonly remember?: 'call' | 'session';
  /** The rule that asked, or the rule or mode that denied. */
  readonly rule: string;
}

/** The agent was resumed from this journal by a new process or thread. */
export interface Resumed {
  readonly type: 'Resumed';
  readonly agentId: string;
  readonly nextRound: number;
  /** Tool calls that had started with no recorded result. */
  readonly pendingCallIds: readonly string[];
  /**
   * Those of `pendingCallIds` that wait again rather than being cut off: a call whose approval was
   * not decided (asked again under the same request id) and a `wait_for_instruction` that was
   * waiting. Absent when there are none (and in journals of earlier versions).
   */
  readonly awaitingCallIds?: readonly string[];
  /** Bytes of a torn last line cut from the file before resuming. */
  readonly truncatedBytes: number;
  /**
   * The definition the resume was given differs from the one the agent started with (its file was
   * edited since): the recorded one runs; this is the hash of the one that was not used.
   */
  readonly definitionChanged?: { readonly hash: string; readonly path?: string };
  /** What else the resume noticed (a recorded definition that reads differently today...). */
  readonly notices?: readonly string[];
  /**
   * For an agent spawned by an agent (absent otherwise, and in journals before it was recorded):
   * the parent's `send_instruction` calls, by the `seq` of their ToolCall in the parent's journal,
   * whose instructions a resumed parent's adoption delivered to this agent again at an index other
   * than the one the call recorded, with the index each has from now on (src/supervisor/
   * adoption.ts). Empty when none moved: its presence says this resume records every move.
   */
  readonly instructionIndices?: readonly InstructionIndex[];
}

/** One instruction a resumed parent's adoption delivered again: see {@link Resumed.instructionIndices}. */
export interface InstructionIndex {
  /** `seq` of the parent's `send_instruction` ToolCall. */
  readonly callSeq: number;
  /** The index it has in the agent's inbox from this resume on. */
  readonly index: number;
}

/** The agent finished. Terminal: nothing follows it. */
export interface Completed {
  readonly type: 'Completed';
  readonly agentId: string;
  /** The final answer text, or the text of the `complete_task` result. */
  readonly answer: string;
  /** The `complete_task` result object, when the agent finished through it. */
  readonly result?: unknown;
  readonly usage: Usage;
  /** USD; null when the model's price is unknown. */
  readonly costUsd: number | null;
  readonly rounds: number;
  /** Model requests (absent before format 3). */
  readonly steps?: number;
  /** A replay: how its tool calls were answered. */
  readonly replay?: ReplayCounts;
}

/** The agent failed. Terminal: nothing follows it. */
export interface Failed {
  readonly type: 'Failed';
  readonly agentId: string;
  readonly reason: FailureReason;
  /** The cause; `error.code` is the machine-readable error code. */
  readonly error: SerializedError;
  readonly usage: Usage;
  /** USD; null when the model's price is unknown. */
  readonly costUsd: number | null;
  readonly rounds: number;
  /** Model requests (absent before format 3). */
  readonly steps?: number;
  readonly replay?: ReplayCounts;
}

/** An event body as the loop writes it. `ts` may be given (e.g. forwarded events); otherwise the sink sets it. */
export type AuditEventInput = (
  | Started
  | InferenceSubmitted
  | ToolCall
  | ToolResult
  | ProviderReceipt
  | HistoryAppended
  | StateChanged
  | Waiting
  | Instructed
  | TurnAnswered
  | TurnCancelled
  | ApprovalRequested
  | ApprovalDecided
  | Resumed
  | Completed
  | Failed
) & { readonly ts?: string };

type Chained<T> = T extends unknown ? Omit<T, 'ts'> & ChainFields : never;

/** A journalled event: a body plus its chain fields. */
export type AuditEvent = Chained<AuditEventInput>;

/** The `type` of a journalled event: `'Started'`, `'ToolCall'`, `'Completed'`... */
export type AuditEventType = AuditEvent['type'];

/** The journalled event of one type: `EventOf<'ToolCall'>`. */
export type EventOf<T extends AuditEventType> = Extract<AuditEvent, { readonly type: T }>;

/** True for Completed and Failed: the events that end an agent. */
export function isTerminal(event: AuditEvent): event is EventOf<'Completed'> | EventOf<'Failed'> {
  return event.type === 'Completed' || event.type === 'Failed';
}

/**
 * SHA-256 (hex) of the canonical JSON of one provider turn's input `{system, input, tools}`: what
 * InferenceSubmitted records and `verifyJournal` recomputes from a re-render.
 *
 * Secret-looking substrings are masked first, exactly as the journal masks them: a re-render from
 * the journal can only ever reproduce the masked text, so hashing it keeps verification possible
 * while no secret reaches the journal, not even as a hash. When the input holds nothing
 * secret-looking, this is the hash of the exact input.
 */
export function hashInput(
  system: string,
  input: string,
  tools: readonly ToolSpec[],
  modelSettings?: ModelSettings,
): string {
  return sha256Hex(canonicalJson(redactStrings({ system, input, tools, ...settingsMember(modelSettings) })));
}

/**
 * `{ modelSettings }` when any setting is set, else nothing: a request without settings hashes as
 * it did before settings existed, so older journals still verify.
 */
function settingsMember(modelSettings: ModelSettings | undefined): { modelSettings?: ModelSettings } {
  return modelSettings === undefined || Object.keys(modelSettings).length === 0 ? {} : { modelSettings };
}

/**
 * SHA-256 of a continuation request's input: the round's `{system, input, tools}` plus
 * `continuation`, the history entries the round added since its first request (the model's text,
 * its calls and the results sent back, as the projection shows them), in order. This is what the
 * provider's native continuation carries; a verifier re-derives it from the journal alone.
 */
export function hashContinuation(
  system: string,
  input: string,
  tools: readonly ToolSpec[],
  continuation: readonly string[],
  modelSettings?: ModelSettings,
): string {
  return sha256Hex(
    canonicalJson(redactStrings({ continuation, input, system, tools, ...settingsMember(modelSettings) })),
  );
}

/**
 * {@link hashInput} (and {@link hashContinuation}) for many requests of one agent: the system
 * prompt and tools are masked and serialized once, and each request only masks and hashes its
 * input (and continuation). Gives exactly their hashes. A continuation passed again as the same
 * array must only have grown since (the loop's round entries are append-only): its earlier items'
 * masked text is reused.
 */
export function inputHasher(
  system: string,
  tools: readonly ToolSpec[],
  modelSettings?: ModelSettings,
): (input: string, continuation?: readonly string[]) => string {
  const { text: suffix, utf8: suffixUtf8 } = fixedPartsOf(system, tools, modelSettings);
  // A round sends one render and a growing continuation: the render's masked JSON is kept, and the
  // continuation's masked items are fed once each, as they are appended, into a running SHA-256 of
  // the canonical text's prefix, copied for each request (else each request re-masked and re-hashed
  // every earlier entry of its round: quadratic in the round's length, and a growing string kept
  // per agent).
  let lastInput: string | undefined;
  let lastInputJson = '';
  let entries: readonly string[] | undefined;
  let entriesSeen = 0;
  let running: Hash | undefined;
  return (input, continuation) => {
    if (input !== lastInput) {
      lastInput = input;
      lastInputJson = JSON.stringify(redactText(input));
    }
    if (continuation === undefined || continuation.length === 0) {
      return sha256Hex(`{"input":${lastInputJson}${suffix}`);
    }
    if (continuation !== entries || continuation.length < entriesSeen || running === undefined) {
      entries = continuation;
      entriesSeen = 0;
      running = createHash('sha256').update('{"continuation":[');
    }
    for (; entriesSeen < continuation.length; entriesSeen += 1) {
      const item = JSON.stringify(redactText(continuation[entriesSeen] ?? ''));
      running.update(entriesSeen === 0 ? item : `,${item}`);
    }
    // The fixed part goes in as the bytes encoded once, not appended to a string per request: a
    // round's requests all end with it, and it is the larger part (~2.6 KB for two tools).
    return running.copy().update(`],"input":${lastInputJson}`).update(suffixUtf8).digest('hex');
  };
}

const FIXED_PARTS_CACHE_SIZE = 64;
/** The masked canonical text after a request's `input` member, and its UTF-8 bytes. */
interface FixedParts {
  readonly text: string;
  readonly utf8: Buffer;
}

/** The masking version the kept fixed parts were made under (see `maskingVersion`). */
let fixedVersion = 0;

/** Fixed parts by the plain JSON of the system prompt, tools and settings. */
const fixedParts = new Map<string, FixedParts>();

/** The last agent's fixed parts, with what they were made from (see {@link fixedPartsOf}). */
let lastFixed:
  | {
      readonly system: string;
      readonly tools: readonly ToolSpec[];
      readonly settings: string;
      readonly parts: FixedParts;
    }
  | undefined;

/**
 * The fixed parts of an agent's requests. Many agents share a system prompt, tools and settings:
 * their masked canonical text is kept, keyed by the (native, fast) plain JSON of the three. Agents
 * that follow one another with the same prompt, settings and tools (a fan-out of one definition)
 * get the last agent's parts without that JSON (2,177 characters, 6.7 KB allocated per agent in
 * the fan-out benchmark). Each agent's tool specs are its own objects, but their names,
 * descriptions and schema objects are the tools', which the registry never changes.
 */
function fixedPartsOf(
  system: string,
  tools: readonly ToolSpec[],
  modelSettings: ModelSettings | undefined,
): FixedParts {
  const { modelSettings: settings } = settingsMember(modelSettings);
  const settingsJson = settings === undefined ? '' : JSON.stringify(settings);
  if (fixedVersion !== maskingVersion()) {
    // A credential was registered since: the parts kept may hold it unmasked.
    fixedVersion = maskingVersion();
    fixedParts.clear();
    lastFixed = undefined;
  }
  const last = lastFixed;
  if (
    last !== undefined &&
    last.system === system &&
    last.settings === settingsJson &&
    sameSpecs(last.tools, tools)
  ) {
    return last.parts;
  }
  const key = JSON.stringify([system, tools, settings ?? null]);
  let parts = fixedParts.get(key);
  if (parts === undefined) {
    // canonicalJson sorts keys: (continuation,) input, (modelSettings,) system, tools.
    const settingsPart =
      settings === undefined ? '' : `,"modelSettings":${canonicalJson(redactStrings(settings))}`;
    const text = `${settingsPart},"system":${canonicalJson(redactStrings(system))},"tools":${canonicalJson(redactStrings(tools))}}`;
    parts = { text, utf8: Buffer.from(text, 'utf8') };
    if (fixedParts.size >= FIXED_PARTS_CACHE_SIZE) fixedParts.clear();
    fixedParts.set(key, parts);
  }
  lastFixed = { system, tools, settings: settingsJson, parts };
  return parts;
}

/** Whether two spec lists name the same tools with the same description and schema objects. */
function sameSpecs(a: readonly ToolSpec[], b: readonly ToolSpec[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) {
    const x = a[i] as ToolSpec;
    const y = b[i] as ToolSpec;
    if (x.name !== y.name || x.description !== y.description || x.parameters !== y.parameters) {
      return false;
    }
  }
  return true;
}

type Kind = 'string' | 'number' | 'boolean' | 'array' | 'object' | 'string|null' | 'number|null';

const REQUIRED: Readonly<Record<AuditEventType, Readonly<Record<string, Kind>>>> = {
  Started: {
    definition: 'object',
    provider: 'string',
    model: 'string',
    contextWindow: 'number',
    maxInputTokens: 'number',
    context: 'array',
    task: 'string',
    metadata: 'object',
    systemPrompt: 'string',
    toolSpecs: 'array',
  },
  InferenceSubmitted: { round: 'number', inputHash: 'string', estimatedTokens: 'number', tools: 'array' },
  ToolCall: { round: 'number', callId: 'string', name: 'string', modelName: 'string' },
  ToolResult: {
    round: 'number',
    callId: 'string',
    name: 'string',
    ok: 'boolean',
    projectionAccepted: 'boolean',
    text: 'string',
    stateUpdates: 'array',
    displayedStateKeys: 'array',
  },
  ProviderReceipt: { round: 'number', receipt: 'object' },
  HistoryAppended: { round: 'number', text: 'string', displayedKeys: 'array' },
  StateChanged: { key: 'string', text: 'string|null' },
  Waiting: { callId: 'string', index: 'number' },
  Instructed: { index: 'number', text: 'string' },
  TurnAnswered: { turn: 'number', answer: 'string' },
  TurnCancelled: { turn: 'number', reason: 'string' },
  ApprovalRequested: {
    round: 'number',
    callId: 'string',
    requestId: 'string',
    name: 'string',
    modelName: 'string',
    args: 'object',
    argsHash: 'string',
    rule: 'string',
    reason: 'string',
    deadline: 'number|null',
  },
  ApprovalDecided: {
    round: 'number',
    callId: 'string',
    name: 'string',
    approved: 'boolean',
    by: 'string',
    rule: 'string',
  },
  Resumed: { nextRound: 'number', pendingCallIds: 'array', truncatedBytes: 'number' },
  Completed: { answer: 'string', usage: 'object', costUsd: 'number|null', rounds: 'number' },
  Failed: { reason: 'string', error: 'object', usage: 'object', costUsd: 'number|null', rounds: 'number' },
};

const HEX64 = /^[0-9a-f]{64}$/;

/**
 * Why `value` is not a well-formed audit event, or undefined when it is. Checks the chain fields
 * and the members each type requires, not every nested value.
 */
export function auditEventProblem(value: unknown): string | undefined {
  if (!isRecord(value)) return 'not a JSON object';
  const type = value.type;
  if (typeof type !== 'string' || !(type in REQUIRED)) return `unknown event type ${JSON.stringify(type)}`;
  if (!Number.isSafeInteger(value.seq) || (value.seq as number) < 0)
    return '`seq` is not a non-negative integer';
  if (typeof value.ts !== 'string') return '`ts` is not a string';
  if (typeof value.agentId !== 'string') return '`agentId` is not a string';
  if (typeof value.prev !== 'string' || !HEX64.test(value.prev)) return '`prev` is not a SHA-256 hex digest';
  if (typeof value.hash !== 'string' || !HEX64.test(value.hash)) return '`hash` is not a SHA-256 hex digest';
  for (const [key, kind] of Object.entries(REQUIRED[type as AuditEventType])) {
    if (!hasKind(value[key], kind))
      return `${type} member \`${key}\` is not ${kind === 'array' ? 'an' : 'a'} ${kind}`;
  }
  return undefined;
}

function hasKind(value: unknown, kind: Kind): boolean {
  switch (kind) {
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isRecord(value);
    case 'string|null':
      return value === null || typeof value === 'string';
    case 'number|null':
      return value === null || typeof value === 'number';
    default:
      return typeof value === kind;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
