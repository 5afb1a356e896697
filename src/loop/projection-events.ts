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

/**
 * The journal format this version writes (recorded as `Started.format`): 3 adds one
 * InferenceSubmitted and one ProviderReceipt per model request. Format 2 and 3 change the
 * projection the same way, so both can be resumed and verified.
 */
export const JOURNAL_FORMAT = 3;

/** Formats this version resumes (older ones are refused with `journal_format`). */
export const RESUMABLE_FORMATS: readonly number[] = [2, 3];

/** Pushes the history entry of a tool call; returns the entry. */
export function applyToolCall(
  projection: Projection,
  modelName: string,
  args: unknown,
  rawArgs: string | undefined,
): string {
  const entry = formatToolCall(modelName, args, rawArgs);
  projection.pushHistory(entry);
  return entry;
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
 * result did not fit the budget. Returns the entry pushed.
 */
export function applyToolResult(
  projection: Projection,
  result: ToolResultEffects,
  modelName: string,
): string {
  if (!result.projectionAccepted) {
    const entry = formatToolResult(modelName, false, RESULT_NOT_FITTED_TEXT);
    projection.pushHistory(entry);
    return entry;
  }
  for (const update of result.stateUpdates) projection.applyUpdates([update]);
  const entry = formatToolResult(modelName, result.ok, result.text);
  projection.pushHistory(entry, result.displayedStateKeys);
  return entry;
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

  /**
   * Applies one event (events that do not touch the projection are ignored). Returns the history
   * entry the event pushed, if it pushed one.
   */
  apply(event: AuditEvent): string | undefined {
    switch (event.type) {
      case 'Started':
        this.#format = event.format ?? 1;
        return undefined;
      case 'HistoryAppended':
        this.#projection.pushHistory(event.text, event.displayedKeys);
        return event.text;
      case 'StateChanged':
        this.#projection.applyUpdates([{ key: event.key, text: event.text }]);
        return undefined;
      case 'ToolCall':
        this.#modelNames.set(event.callId, event.modelName);
        return this.#format >= 2
          ? applyToolCall(this.#projection, event.modelName, event.args, event.rawArgs)
          : undefined;
      case 'ToolResult':
        return this.#format >= 2
          ? applyToolResult(this.#projection, event, this.#modelName(event))
          : undefined;
      default:
        return undefined;
    }
  }

  #modelName(result: EventOf<'ToolResult'>): string {
    return this.#modelNames.get(result.callId) ?? result.name;
  }
}
