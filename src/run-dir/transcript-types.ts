/**
 * The transcript of one agent (see transcript.ts): rounds, model requests, tool calls, states,
 * waits, restarts, approvals and the outcome, as plain typed data.
 */
import type { SerializedError } from '../errors.ts';
import type { HistoryKind, StartedWarning } from '../journal/events.ts';
import type { AgentLimits, FailureReason } from '../loop/types.ts';
import type { Receipt, StopReason, ToolChoice, Usage } from '../providers/types.ts';
import type { StateUpdate } from '../tools/types.ts';

/** Epoch milliseconds. */
export type Millis = number;

/** The input of one round as the model was given it, section by section. */
export interface RoundInput {
  readonly context: readonly string[];
  readonly task: string;
  /** History entries in order; `superseded` entries show a marker instead of their text. */
  readonly history: readonly { readonly text: string; readonly superseded: boolean }[];
  /** States rendered after the history: the current value of each key no entry displays. */
  readonly states: readonly { readonly key: string; readonly text: string }[];
}

/** One model request (a step). */
export interface RequestEntry {
  readonly kind: 'request';
  readonly at: Millis;
  /** When its receipt was written; undefined when it never ended (a crash or kill cut it off). */
  readonly end: Millis | undefined;
  readonly round: number;
  /** Absent in journals before format 3. */
  readonly step: number | undefined;
  /** 1-based position in its round. */
  readonly request: number;
  readonly estimatedTokens: number;
  /** Model-facing names of the tools offered. */
  readonly tools: readonly string[];
  readonly toolChoice: ToolChoice | undefined;
  /** The request is the freeform capture turn of this tool call. */
  readonly captureFor: string | undefined;
  readonly receipt: Receipt | undefined;
  readonly stopReason: StopReason | undefined;
  readonly errorCode: string | undefined;
}

/** The model's own text. */
export interface TextEntry {
  readonly kind: 'text';
  readonly at: Millis;
  readonly round: number;
  readonly text: string;
}

/** What the loop added to the history besides tool calls, results and the model's text. */
export interface NoteEntry {
  readonly kind: 'note';
  readonly at: Millis;
  readonly round: number;
  readonly note: Exclude<HistoryKind, 'tool_call' | 'tool_result' | 'assistant'>;
  readonly text: string;
}

/** A wait for an instruction, inside its `wait_for_instruction` call. */
export interface WaitInfo {
  readonly at: Millis;
  /** The instruction number asked for (0-based). */
  readonly index: number;
  /** When the instruction arrived; undefined when none did. */
  readonly instructedAt: Millis | undefined;
  readonly instruction: string | undefined;
}

/** A permission decision on a tool call: asked of a person (with its request), or a rule's. */
export interface ApprovalInfo {
  /** When the call started waiting; undefined when nobody was asked (a deny rule, `dontAsk`). */
  readonly requestedAt: Millis | undefined;
  readonly requestId: string | undefined;
  /** The rule that asked, or the rule or mode that decided. */
  readonly rule: string;
  /** Why it asked. */
  readonly reason: string | undefined;
  /** When it was decided; undefined while it waited (a crash or kill cut it off). */
  readonly decidedAt: Millis | undefined;
  readonly approved: boolean | undefined;
  /** `person`, `rule`, `timeout`, `unattended` or `policy`. */
  readonly by: string | undefined;
  readonly decider: string | undefined;
  readonly decisionReason: string | undefined;
}

/** One tool call and its result. */
export interface ToolEntry {
  readonly kind: 'tool';
  readonly at: Millis;
  /** When its result was written (for an interrupted call: the last event before its thread died); undefined when it has none. */
  readonly end: Millis | undefined;
  readonly round: number;
  readonly callId: string;
  /** Canonical name. */
  readonly name: string;
  /** The name the model used. */
  readonly modelName: string;
  readonly args: Readonly<Record<string, unknown>> | undefined;
  /** Argument text that did not parse. */
  readonly rawArgs: string | undefined;
  readonly result:
    | {
        readonly ok: boolean;
        readonly text: string;
        /** Answered with a refusal, never executed. */
        readonly refused: boolean;
        /** False: the result did not fit the budget and the model was told so instead. */
        readonly projectionAccepted: boolean;
        readonly stateUpdates: readonly StateUpdate[];
        readonly data: unknown;
      }
    | undefined;
  /** A thread crash or kill cut the call off; the resumed agent was told so. */
  readonly interrupted: boolean;
  /** The agent this call spawned (`spawn_agent`). */
  readonly childAgentId: string | undefined;
  readonly wait: WaitInfo | undefined;
  /** The call's permission decision, when it needed one. */
  readonly approval: ApprovalInfo | undefined;
}

/** A keyed state was replaced or removed, superseding the history entries that showed it. */
export interface StateEntry {
  readonly kind: 'state';
  readonly at: Millis;
  readonly round: number;
  readonly key: string;
  /** The new value; null when removed. */
  readonly text: string | null;
  /** The call whose result changed it. */
  readonly callId: string | undefined;
  /** History entries replaced by a marker. */
  readonly superseded: number;
}

/** The agent was resumed from its journal (after a thread crash, a kill, or `troupe resume`). */
export interface ResumedEntry {
  readonly kind: 'resumed';
  readonly at: Millis;
  readonly nextRound: number;
  /** Calls that had started with no result: recorded as interrupted, not run again. */
  readonly pendingCallIds: readonly string[];
  /** Calls that wait again instead (an undecided approval, a `wait_for_instruction`). */
  readonly awaitingCallIds: readonly string[];
}

/**
 * A tool call a person approved or denied. The journal records no approvals yet; the kind is here
 * so the renderers handle it once approvals are journalled.
 */
export interface ApprovalEntry {
  readonly kind: 'approval';
  readonly at: Millis;
  readonly round: number;
  readonly callId: string;
  readonly tool: string;
  readonly decision: 'approved' | 'denied';
  /** Who decided, when known. */
  readonly by: string | undefined;
  readonly reason: string | undefined;
}

export type TranscriptEntry =
  | RequestEntry
  | TextEntry
  | NoteEntry
  | ToolEntry
  | StateEntry
  | ResumedEntry
  | ApprovalEntry;

/** One round: one render of the projection and the requests and calls made on it. */
export interface TranscriptRound {
  readonly round: number;
  readonly at: Millis;
  /** What the model was given; undefined unless inputs were asked for. */
  readonly input: RoundInput | undefined;
  readonly entries: readonly TranscriptEntry[];
}

/** How the agent ended. */
export interface TranscriptOutcome {
  readonly status: 'completed' | 'failed';
  readonly at: Millis;
  readonly answer: string | undefined;
  readonly result: unknown;
  readonly reason: FailureReason | undefined;
  readonly error: SerializedError | undefined;
  readonly usage: Usage;
  readonly costUsd: number | null;
  readonly rounds: number;
  readonly steps: number | undefined;
}

/** An agent's transcript. */
export interface Transcript {
  readonly agentId: string;
  readonly parentId: string | undefined;
  readonly definition: { readonly name: string; readonly path: string | undefined };
  readonly provider: string;
  readonly model: string;
  readonly format: number;
  readonly task: string;
  readonly context: readonly string[];
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly systemPrompt: string;
  /** Model-facing names of every tool the agent could be offered. */
  readonly tools: readonly string[];
  readonly limits: AgentLimits | undefined;
  readonly warnings: readonly StartedWarning[];
  readonly notices: readonly string[];
  /** Time of the first event; undefined for an empty journal. */
  readonly startedAt: Millis | undefined;
  /** Time of the last event. */
  readonly lastAt: Millis | undefined;
  /** Entries before the first round (a resume before any round ran). */
  readonly preamble: readonly TranscriptEntry[];
  readonly rounds: readonly TranscriptRound[];
  readonly outcome: TranscriptOutcome | undefined;
  /** Agents spawned by this one (from its `spawn_agent` results), in order. */
  readonly children: readonly string[];
  /** Sum of the receipts (the outcome's usage when there is one). */
  readonly usage: Usage;
  readonly costUsd: number | null;
  readonly steps: number;
  readonly toolCalls: number;
  readonly retries: number;
}
