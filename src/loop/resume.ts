/**
 * Continuing an agent from its journal: rebuild the projection from the recorded changes, settle
 * calls that were cut off, answer a wait that was parked, then go on at the next round. Tool calls
 * with a recorded result are never executed again; calls without one are recorded as interrupted
 * rather than re-run, because whether they took effect is unknown.
 */

import { SystemError } from '../errors.ts';
import { INTERRUPTED_TOOL_RESULT } from '../journal/constants.ts';
import type { AuditEvent } from '../journal/events.ts';
import { type PendingApproval, resumeState } from '../journal/resume.ts';
import { COMPLETE_TASK } from '../tools/builtin/orchestration.ts';
import { denialText } from '../tools/permissions.ts';
import { approvalHook, recordDecision } from './approvals.ts';
import type { RunContext } from './context.ts';
import { JOURNAL_FORMAT, ProjectionReplay, RESUMABLE_FORMATS } from './projection-events.ts';
import { waitForInstruction } from './routed-tools.ts';
import { recordToolResult, runToolCall } from './tool-calls.ts';
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
  run.approvalsRequested = state.approvalsRequested;
  for (const result of state.finishedCalls.values()) {
    if (!result.ok || result.refused) continue;
    run.succeededTools.add(result.name);
    if (result.name === COMPLETE_TASK) run.completion = { value: result.data };
  }
  const awaiting = [
    ...(state.pendingApproval ? [state.pendingApproval.call.callId] : []),
    ...(state.waiting ? [state.waiting.callId] : []),
  ];
  run.record({
    type: 'Resumed',
    agentId: run.agentId,
    nextRound: state.nextRound,
    pendingCallIds: [
      ...state.pendingCalls.map((c) => c.callId),
      ...state.deniedCalls.map((d) => d.call.callId),
      ...awaiting,
    ],
    ...(awaiting.length > 0 ? { awaitingCallIds: awaiting } : {}),
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
  for (const { call, decision } of state.deniedCalls) {
    const text = denialText(call.modelName, { by: decision.by, reason: decision.reason });
    recordToolResult(run, call.callId, call.name, call.modelName, { ok: false, text }, true);
  }
  if (state.pendingApproval) await finishPendingApproval(run, state.pendingApproval);
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
 * Waits again for the decision on a call that was asking when its agent stopped (same request id:
 * whoever decides is not asked twice), then runs or denies it and records its result. If the call no
 * longer asks (the agent's permissions changed), the request is closed with a `policy` decision.
 */
async function finishPendingApproval(run: RunContext, pending: PendingApproval): Promise<void> {
  const { call, request } = pending;
  let asked = false;
  const hook = approvalHook(run, call.callId, request);
  const result = await runToolCall(run, call.callId, call.modelName, request.args, (ask) => {
    asked = true;
    return hook(ask);
  });
  if (!asked && !run.signal.aborted && result.denied === undefined) {
    recordDecision(
      run,
      call.callId,
      call.name,
      request.rule,
      { approved: true, by: 'policy', reason: 'the call no longer asks for approval' },
      request.requestId,
    );
  }
  const refused = result.denied !== undefined;
  recordToolResult(run, call.callId, call.name, call.modelName, result, refused);
  if (result.ok && !refused) run.succeededTools.add(call.name);
}
