/**
 * Continuing an agent from its journal: rebuild the projection from the recorded changes, settle
 * calls that were cut off, answer a wait that was parked, then go on at the next round. Tool calls
 * with a recorded result are never executed again; calls without one are recorded as interrupted
 * rather than re-run, because whether they took effect is unknown.
 */

import { SystemError } from '../errors.ts';
import { INTERRUPTED_TOOL_RESULT } from '../journal/constants.ts';
import type { AuditEvent } from '../journal/events.ts';
import { resumeState } from '../journal/resume.ts';
import { COMPLETE_TASK } from '../tools/builtin/orchestration.ts';
import type { RunContext } from './context.ts';
import { JOURNAL_FORMAT, ProjectionReplay, RESUMABLE_FORMATS } from './projection-events.ts';
import { waitForInstruction } from './routed-tools.ts';
import { recordToolResult } from './tool-calls.ts';
import type { AgentChannels } from './types.ts';

/**
 * Replays `events` into `run` and records the Resumed event. Throws `SystemError('journal_format')`
 * for a journal of another format: replaying it would rebuild a different projection.
 */
export async function restoreFromJournal(
  run: RunContext,
  events: readonly AuditEvent[],
  channels: AgentChannels,
  truncatedBytes: number,
  noticed: {
    readonly definitionChanged?: { readonly hash: string; readonly path?: string };
    readonly notices?: readonly string[];
  } = {},
): Promise<void> {
  const state = resumeState(events);
  const format = state.started.format ?? 1;
  if (!RESUMABLE_FORMATS.includes(format)) {
    throw new SystemError(
      'journal_format',
      `Expected a journal of format ${RESUMABLE_FORMATS.join(' or ')} to resume, got format ${format} (${format < JOURNAL_FORMAT ? 'written by an older troupe; resume it with that version' : 'written by a newer troupe'})`,
      { format, expected: RESUMABLE_FORMATS },
    );
  }
  const replay = new ProjectionReplay(run.projection);
  replay.apply(state.started);
  for (const change of state.projection) replay.apply(change);
  run.round = state.nextRound - 1;
  run.roundsUsed = state.roundsUsed;
  run.stepsUsed = state.stepsUsed;
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
    ...(noticed.definitionChanged ? { definitionChanged: noticed.definitionChanged } : {}),
    ...(noticed.notices !== undefined && noticed.notices.length > 0 ? { notices: noticed.notices } : {}),
  });
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
