/**
 * Continuing an agent from its journal: rebuild the projection from the recorded changes, settle
 * calls that were cut off, answer a wait that was parked, then go on at the next round. Tool calls
 * with a recorded result are never executed again; calls without one are recorded as interrupted
 * rather than re-run, because whether they took effect is unknown. Host tool calls are the
 * exception: they ran on the supervisor, which kept their outcome, so that outcome is recorded.
 */

import { abortable } from '../abort.ts';
import { SystemError } from '../errors.ts';
import { canonicalJson, sha256Hex } from '../journal/canonical-json.ts';
import { INTERRUPTED_TOOL_RESULT } from '../journal/constants.ts';
import type { AuditEvent, InstructionIndex } from '../journal/events.ts';
import { type PendingApproval, resumeState } from '../journal/resume.ts';
import { COMPLETE_TASK } from '../tools/builtin/orchestration.ts';
import { denialText } from '../tools/permissions.ts';
import type { ToolOutcome } from '../tools/types.ts';
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
    readonly instructionIndices?: readonly InstructionIndex[];
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
    ...(noticed.instructionIndices === undefined ? {} : { instructionIndices: noticed.instructionIndices }),
  });
  const outcomes = await Promise.all(state.pendingCalls.map((call) => cutOffOutcome(run, channels, call)));
  state.pendingCalls.forEach((call, i) => {
    const outcome = outcomes[i] ?? { ok: false, text: INTERRUPTED_TOOL_RESULT };
    recordToolResult(run, call.callId, call.name, call.modelName, outcome, false);
    if (outcome.ok) run.succeededTools.add(call.name);
  });
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
 * What a call cut off by the agent's end resolves to: interrupted, unless it is a host tool call
 * the supervisor ran (or still runs) and kept: then its outcome, so it is never run twice nor told
 * to the model as interrupted when it took effect (a child spawned, an instruction sent).
 */
async function cutOffOutcome(
  run: RunContext,
  channels: AgentChannels,
  call: { readonly callId: string; readonly name: string },
): Promise<ToolOutcome> {
  const interrupted = { ok: false, text: INTERRUPTED_TOOL_RESULT };
  const asked = channels.hostToolOutcome?.(call.name, call.callId, run.signal);
  if (asked === undefined) return interrupted;
  try {
    const outcome = await abortable(asked, run.signal);
    return run.signal.aborted ? interrupted : outcome;
  } catch {
    return interrupted;
  }
}

/** Why a call that waited for approval when its agent stopped is not run after the restart. */
export const MASKED_ARGUMENTS_REASON =
  'its arguments held a secret, which the journal keeps masked, so they are not known after the agent was restarted';

/**
 * Waits again for the decision on a call that was asking when its agent stopped (same request id:
 * whoever decides is not asked twice), then runs or denies it and records its result. If the call no
 * longer asks (the agent's permissions changed), the request is closed with a `policy` decision.
 * So is a call whose arguments held a secret: the journal has them masked, and running the tool
 * with `[REDACTED]` in place of the value would do something nobody approved.
 */
async function finishPendingApproval(run: RunContext, pending: PendingApproval): Promise<void> {
  const { call, request } = pending;
  // argsMasked: masking changed the arguments, so the journal's are not the model's. A journal
  // written before argsMasked existed says so by its argsHash, then the hash of the real arguments:
  // the journalled ones hash differently exactly when masking changed them.
  if (request.argsMasked === true || sha256Hex(canonicalJson(request.args)) !== request.argsHash) {
    const reason = MASKED_ARGUMENTS_REASON;
    const decision = { approved: false, by: 'policy', reason } as const;
    recordDecision(run, call.callId, call.name, request.rule, decision, request.requestId);
    const text = `\`${call.modelName}\` did not run: ${reason}. Call it again if it is still needed.`;
    recordToolResult(run, call.callId, call.name, call.modelName, { ok: false, text }, true);
    return;
  }
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
