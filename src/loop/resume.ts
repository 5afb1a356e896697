/**
 * Continuing an agent from its journal: rebuild the projection from the recorded changes, settle
 * calls that were cut off, answer a wait that was parked, then go on at the next round. Tool calls
 * with a recorded result are never executed again; calls without one are recorded as interrupted
 * rather than re-run, because whether they took effect is unknown.
 */

import { INTERRUPTED_TOOL_RESULT } from '../journal/constants.ts';
import type { AuditEvent } from '../journal/events.ts';
import { resumeState } from '../journal/resume.ts';
import { RESULT_NOT_FITTED_TEXT } from '../projection/constants.ts';
import { COMPLETE_TASK } from '../tools/builtin/orchestration.ts';
import type { RunContext } from './context.ts';
import { formatToolResult } from './history-format.ts';
import { recordToolResult } from './round.ts';
import { waitForInstruction } from './routed-tools.ts';
import type { AgentChannels } from './types.ts';

/** Replays `events` into `run` and records the Resumed event. */
export async function restoreFromJournal(
  run: RunContext,
  events: readonly AuditEvent[],
  channels: AgentChannels,
  truncatedBytes: number,
): Promise<void> {
  const state = resumeState(events);
  for (const change of state.projection) {
    if (change.type === 'HistoryAppended') run.projection.pushHistory(change.text, change.displayedKeys);
    else run.projection.applyUpdates([{ key: change.key, text: change.text }]);
  }
  run.round = state.nextRound - 1;
  run.roundsUsed = state.roundsUsed;
  run.totals = state.totals;
  run.instructionsReceived = state.instructionsReceived;
  for (const result of state.finishedCalls.values()) {
    if (!result.ok || result.refused) continue;
    run.succeededTools.add(result.name);
    if (result.name === COMPLETE_TASK) run.completion = { value: result.data };
  }
  run.record({
    type: 'Resumed',
    agentId: run.agentId,
    nextRound: state.nextRound,
    pendingCallIds: [
      ...state.pendingCalls.map((c) => c.callId),
      ...(state.waiting ? [state.waiting.callId] : []),
    ],
    truncatedBytes,
  });
  completeCutResults(run, events);
  for (const call of state.pendingCalls) {
    recordToolResult(
      run,
      call.callId,
      call.name,
      call.modelName,
      { ok: false, text: INTERRUPTED_TOOL_RESULT },
      false,
    );
  }
  const waiting = state.waiting;
  if (waiting) {
    const call = events.find((e) => e.type === 'ToolCall' && e.callId === waiting.callId);
    const modelName = call?.type === 'ToolCall' ? call.modelName : 'wait_for_instruction';
    let text = waiting.instruction ?? null;
    if (text === null && channels.waitForInstruction) {
      text = await waitForInstruction(run, channels.waitForInstruction, waiting.callId, run.signal);
    }
    const outcome =
      text === null
        ? { ok: true, text: 'No instruction arrived. Continue with what you have, or finish your task.' }
        : { ok: true, text: `Instruction: ${text}` };
    recordToolResult(run, waiting.callId, 'wait_for_instruction', modelName, outcome, false);
  }
}

/**
 * A crash can fall between a ToolResult and the projection changes that follow it (its
 * StateChanged events, then its history entry). The result is known, so the call is not run again:
 * the missing changes are made and journalled now, exactly as the loop would have made them.
 */
function completeCutResults(run: RunContext, events: readonly AuditEvent[]): void {
  const shown = new Set<string>();
  const appliedUpdates = new Map<string, number>();
  const modelNames = new Map<string, string>();
  for (const event of events) {
    if (event.type === 'HistoryAppended' && event.kind === 'tool_result' && event.callId)
      shown.add(event.callId);
    if (event.type === 'StateChanged' && event.callId) {
      appliedUpdates.set(event.callId, (appliedUpdates.get(event.callId) ?? 0) + 1);
    }
    if (event.type === 'ToolCall') modelNames.set(event.callId, event.modelName);
  }
  for (const event of events) {
    if (event.type !== 'ToolResult' || shown.has(event.callId)) continue;
    const modelName = modelNames.get(event.callId) ?? event.name;
    if (!event.projectionAccepted) {
      run.pushHistory(
        formatToolResult(modelName, false, RESULT_NOT_FITTED_TEXT),
        'tool_result',
        [],
        event.callId,
      );
      continue;
    }
    for (const update of event.stateUpdates.slice(appliedUpdates.get(event.callId) ?? 0)) {
      run.projection.applyUpdates([update]);
      run.record({
        type: 'StateChanged',
        agentId: run.agentId,
        key: update.key,
        text: update.text,
        round: event.round,
        callId: event.callId,
      });
    }
    run.pushHistory(
      formatToolResult(modelName, event.ok, event.text),
      'tool_result',
      event.displayedStateKeys,
      event.callId,
    );
  }
}
