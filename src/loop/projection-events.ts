/**
 * How journalled events change the projection. The live loop and every replay (resume, verify's
 * re-render) go through these functions, so a projection rebuilt from a journal is the projection
 * the loop had, entry for entry.
 *
 * Since journal format 2, a ToolCall event implies its history entry and a ToolResult event implies
 * its state updates and its entry: they carry everything those need, so the journal does not repeat
 * them as HistoryAppended and StateChanged events (which cost as much to write as the rest of a
 * round). Format 1 journals (no `format` on Started) wrote those events; replay still reads them.
 */
import type { AuditEvent, EventOf } from '../journal/events.ts';
import { RESULT_NOT_FITTED_TEXT } from '../projection/constants.ts';
import type { Projection } from '../projection/projection.ts';
import type { StateUpdate } from '../tools/types.ts';
import { formatToolCall, formatToolResult } from './history-format.ts';

/** The journal format this version writes (recorded as `Started.format`). */
export const JOURNAL_FORMAT = 2;

/** Pushes the history entry of a tool call. */
export function applyToolCall(
  projection: Projection,
  modelName: string,
  args: unknown,
  rawArgs: string | undefined,
): void {
  projection.pushHistory(formatToolCall(modelName, args, rawArgs));
}

/** What a recorded tool result changes: the members of a ToolResult event that matter here. */
export interface ToolResultEffects {
  readonly ok: boolean;
  readonly projectionAccepted: boolean;
  readonly text: string;
  readonly stateUpdates: readonly StateUpdate[];
  readonly displayedStateKeys: readonly string[];
}

/**
 * Applies a tool result: its state updates, then its entry; or only the not-fitted entry when the
 * result did not fit the budget.
 */
export function applyToolResult(projection: Projection, result: ToolResultEffects, modelName: string): void {
  if (!result.projectionAccepted) {
    projection.pushHistory(formatToolResult(modelName, false, RESULT_NOT_FITTED_TEXT));
    return;
  }
  for (const update of result.stateUpdates) projection.applyUpdates([update]);
  projection.pushHistory(formatToolResult(modelName, result.ok, result.text), result.displayedStateKeys);
}

/** Replays a journal's events, in order, onto a projection. */
export class ProjectionReplay {
  readonly #projection: Projection;
  readonly #modelNames = new Map<string, string>();
  #format = 1;

  /** `projection` starts as the Started event's context and task. */
  constructor(projection: Projection) {
    this.#projection = projection;
  }

  /** The format of the journal being replayed (known once its Started event was applied). */
  get format(): number {
    return this.#format;
  }

  /** Applies one event (events that do not touch the projection are ignored). */
  apply(event: AuditEvent): void {
    switch (event.type) {
      case 'Started':
        this.#format = event.format ?? 1;
        return;
      case 'HistoryAppended':
        this.#projection.pushHistory(event.text, event.displayedKeys);
        return;
      case 'StateChanged':
        this.#projection.applyUpdates([{ key: event.key, text: event.text }]);
        return;
      case 'ToolCall':
        this.#modelNames.set(event.callId, event.modelName);
        if (this.#format >= 2) applyToolCall(this.#projection, event.modelName, event.args, event.rawArgs);
        return;
      case 'ToolResult':
        if (this.#format >= 2) applyToolResult(this.#projection, event, this.#modelName(event));
        return;
      default:
        return;
    }
  }

  #modelName(result: EventOf<'ToolResult'>): string {
    return this.#modelNames.get(result.callId) ?? result.name;
  }
}
