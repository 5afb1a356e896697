/** Public types of the projection: changes, options, estimates and snapshots. */
import type { StateUpdate } from '../tools/types.ts';
import type { Calibrator } from './calibrator.ts';
import type { TokenCounter } from './token-counter.ts';

/**
 * One change to a projection: state updates, then (optionally) one new history entry. A tool's
 * `ToolOutcome` is a `ProjectionChange` as it is: when `ok` is false its state updates and displayed
 * keys are ignored and only its text is added, because failed results change no state.
 */
export interface ProjectionChange {
  /** The history entry to add, if any. */
  readonly text?: string;
  /** False for a failed tool outcome. @default true */
  readonly ok?: boolean;
  /** Applied in order before the entry is added, so they supersede only earlier entries. */
  readonly stateUpdates?: readonly StateUpdate[];
  /** State keys the new entry displays: those states are not rendered again after the history. */
  readonly displayedStateKeys?: readonly string[];
}

/** A tool result as the loop hands it to the projection (a `ToolOutcome` fits). */
export interface ToolResultInput extends ProjectionChange {
  readonly text: string;
  readonly ok: boolean;
}

/** Where `addToolResult` checks the budget. */
export interface ToolResultOptions {
  /**
   * When set, a result whose projection would exceed this estimate is not added: `notFittedText`
   * is added instead and no state changes.
   */
  readonly maxInputTokens?: number;
  /** @default RESULT_NOT_FITTED_TEXT */
  readonly notFittedText?: string;
}

/** What happened to a tool result. */
export interface ToolResultAdmission {
  /** False when the result did not fit and the not-fitted text was added instead. */
  readonly accepted: boolean;
  /** The estimate the result alone would have led to (equal to the current estimate when accepted). */
  readonly candidateTokens: number;
}

/** The parts of an input-token estimate. */
export interface TokenEstimate {
  /** counter.count(render()), exactly. */
  readonly renderTokens: number;
  /** The protocol reserve. */
  readonly reserveTokens: number;
  /** renderTokens + reserveTokens: what to report to a calibrator next to the provider's receipt. */
  readonly rawTokens: number;
  /** rawTokens after calibration: what budget checks compare with. */
  readonly estimatedTokens: number;
}

/** How a projection counts tokens. */
export interface ProjectionOptions {
  /** @default heuristicCounter (see counterForModel) */
  readonly counter?: TokenCounter;
  /**
   * Tokens kept for everything in a request outside the render: protocol framing, tool schemas,
   * and the system prompt if the caller does not count it separately.
   * @default PROTOCOL_TOKEN_RESERVE (4096)
   */
  readonly reserveTokens?: number;
  /** Scales estimates by what receipts taught the calibrator about `model`. */
  readonly calibration?: { readonly calibrator: Calibrator; readonly model: string };
}

/** A new projection: fixed context sections and the task. */
export interface ProjectionInit extends ProjectionOptions {
  /** Ordered, immutable for the projection's life. Empty ones are not rendered. */
  readonly context?: readonly string[];
  /** @default '' */
  readonly task?: string;
}

/** A projection as plain JSON, enough to rebuild it exactly (e.g. when resuming from a journal). */
export interface ProjectionSnapshot {
  readonly version: 1;
  readonly context: readonly string[];
  readonly task: string;
  readonly history: readonly {
    readonly text: string;
    /** Keys the entry still displays (a superseded entry displays none). */
    readonly displayedStateKeys: readonly string[];
  }[];
  /** Current states in state order (the most recently updated last). */
  readonly states: readonly { readonly key: string; readonly text: string }[];
}
