/**
 * A tool call waiting for a person: the loop's side of approvals (docs/permissions.md). The request
 * is journalled (ApprovalRequested), the agent parks on its runner's approval channel until a
 * decision or the deadline, and the decision is journalled (ApprovalDecided) and made durable
 * before the tool runs. Parking costs no provider calls and no tokens; what it holds while it waits
 * is the runner's business (a promise in an actor host; a parked job on Redis).
 */
import { followSignal } from '../abort.ts';
import { MAX_TIMER_MS } from '../constants.ts';
import { canonicalJson, sha256Hex } from '../journal/canonical-json.ts';
import type { EventOf } from '../journal/events.ts';
import { redactText, redactValue } from '../journal/redact.ts';
import { type ApprovalDecision, type ApprovalRequest, rememberable } from '../protocol/approvals.ts';
import type { ApprovalAsk } from '../tools/toolbox.ts';
import type { RunContext } from './context.ts';

/** How a run waits for decisions. */
export interface ApprovalSettings {
  /** How long a request waits; 0 = no limit. */
  readonly timeoutMs: number;
  /** What the deadline decides. */
  readonly onTimeout: 'deny' | 'allow';
}

/**
 * The `approve` hook of one call: asks (or, for a resumed agent, asks again under the journalled
 * request), waits, journals the decision. `earlier` is the call's ApprovalRequested from the journal.
 */
export function approvalHook(
  ctx: RunContext,
  callId: string,
  earlier?: EventOf<'ApprovalRequested'>,
): (ask: ApprovalAsk) => Promise<ApprovalDecision> {
  return async (ask) => {
    const request = earlier
      ? { ...requestOf(earlier), toolArgs: redactValue(ask.args) }
      : newRequest(ctx, callId, ask);
    if (!earlier) {
      ctx.approvalsRequested += 1;
      ctx.record({
        type: 'ApprovalRequested',
        agentId: ctx.agentId,
        round: ctx.round,
        callId,
        requestId: request.requestId,
        name: request.tool,
        modelName: request.modelName,
        args: request.args,
        argsHash: request.argsHash,
        ...(request.argsMasked ? { argsMasked: true } : {}),
        rule: request.rule,
        reason: request.reason,
        deadline: request.deadline,
      });
    }
    const decided = await awaitDecision(ctx, request);
    // Journalled as what it is: a rule holding a masked secret is never remembered for the session.
    const decision =
      decided?.remember === 'session' && !rememberable(request.rule)
        ? { ...decided, remember: 'call' as const }
        : decided;
    // Cancelled while waiting, or the wait ended by its runner (a cancel or a stopping thread whose
    // signal has not reached the agent yet): nothing was decided, so nothing is journalled as a
    // decision; the agent is ending (a retry or a resume asks again).
    if (decision === null || ctx.signal.aborted)
      return { approved: false, by: 'policy', reason: 'the agent was cancelled' };
    recordDecision(ctx, callId, request.tool, request.rule, decision, request.requestId);
    // The decision must be durable before the tool runs: a restarted agent never asks again for a
    // decided call, and never runs a denied one.
    await ctx.journalFlushed();
    return decision;
  };
}

/** Journals a decision (ApprovalDecided). Without `requestId`: a denial no one was asked about. */
export function recordDecision(
  ctx: RunContext,
  callId: string,
  tool: string,
  rule: string,
  decision: ApprovalDecision,
  requestId?: string,
): void {
  ctx.record({
    type: 'ApprovalDecided',
    agentId: ctx.agentId,
    round: ctx.round,
    callId,
    ...(requestId === undefined ? {} : { requestId }),
    name: tool,
    approved: decision.approved,
    by: decision.by,
    ...(decision.decider === undefined ? {} : { decider: decision.decider }),
    ...(decision.reason === undefined ? {} : { reason: decision.reason }),
    ...(decision.remember === undefined ? {} : { remember: decision.remember }),
    rule,
  });
}

/**
 * The request an ApprovalRequested event records (`toolArgs`: the call's canonical arguments),
 * masked (see {@link maskedRequest}).
 */
export function requestOf(
  event: EventOf<'ApprovalRequested'>,
  toolArgs: Readonly<Record<string, unknown>> = event.args,
): ApprovalRequest {
  return maskedRequest({
    requestId: event.requestId,
    agentId: event.agentId,
    callId: event.callId,
    tool: event.name,
    modelName: event.modelName,
    args: event.args,
    toolArgs,
    argsHash: event.argsHash,
    ...(event.argsMasked ? { argsMasked: true } : {}),
    rule: event.rule,
    reason: event.reason,
    deadline: event.deadline,
    requestedAt: event.ts,
  });
}

/**
 * `request` as it may leave the agent: its arguments masked as the journal masks them (by key and
 * by shape, `redactValue`), its rule and reason by shape (a shell line asked as written is its
 * rule). A model repeats keys it read, and the request is shown to a person, emitted as
 * `agent:approval`, stored in Redis: a person decides on `[REDACTED]` in place of the value. The
 * approved tool runs with the call's own arguments, never these. When masking changed the
 * arguments, `argsHash` becomes the hash of the masked ones and `argsMasked` is set: a hash of the
 * real ones would give a short secret away to anyone who can guess it (`{"password":"hunter2"}`).
 * Idempotent: the supervisor masks again what the agent's thread masked (and may mask more: the
 * secrets the program registered in its own thread).
 */
export function maskedRequest(request: ApprovalRequest): ApprovalRequest {
  const args = redactValue(request.args);
  const masked = canonicalJson(args);
  const changed = masked !== canonicalJson(request.args);
  return {
    ...request,
    args,
    ...(changed ? { argsHash: sha256Hex(masked), argsMasked: true } : {}),
    toolArgs: redactValue(request.toolArgs),
    rule: redactText(request.rule),
    reason: redactText(request.reason),
  };
}

function newRequest(ctx: RunContext, callId: string, ask: ApprovalAsk): ApprovalRequest {
  const { timeoutMs } = ctx.approvalSettings;
  // Unique per agent and request, and the same whichever runner reads it back from the journal.
  const requestId = `apr_${sha256Hex(`${ctx.agentId}\n${ctx.approvalsRequested}\n${callId}`).slice(0, 24)}`;
  return maskedRequest({
    requestId,
    agentId: ctx.agentId,
    callId,
    tool: ask.tool,
    modelName: ask.modelName,
    args: ask.modelArgs,
    toolArgs: ask.args,
    // Replaced by the masked arguments' hash when masking changes them (see maskedRequest).
    argsHash: sha256Hex(canonicalJson(ask.modelArgs)),
    rule: ask.rule,
    reason: ask.reason,
    deadline: timeoutMs > 0 ? Date.now() + timeoutMs : null,
    requestedAt: new Date().toISOString(),
  });
}

/**
 * Parks until a decision arrives, the deadline passes (decided by `onTimeout`) or the agent is
 * cancelled; null when the wait ended with no decision and before the deadline (the runner gave it
 * up: a cancel, a thread stopping), which is no timeout.
 */
async function awaitDecision(ctx: RunContext, request: ApprovalRequest): Promise<ApprovalDecision | null> {
  // The request is stored before anyone is asked: a decision always answers a journalled request.
  ctx.commitJournal();
  const channel = ctx.approvalChannel;
  if (!channel) {
    return {
      approved: false,
      by: 'unattended',
      reason:
        'this agent runs without a supervisor or a person to ask; allow the call with a permissions rule',
    };
  }
  const controller = new AbortController();
  const unfollow = followSignal(ctx.signal, controller);
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = (deadline: number): void => {
    const remaining = deadline - Date.now();
    // Node fires a timer past the longest delay at once, so a far deadline (an unchecked run()
    // option, a journal's) is waited for in steps of at most that delay.
    if (remaining > MAX_TIMER_MS) {
      timer = setTimeout(() => arm(deadline), MAX_TIMER_MS);
      return;
    }
    timer = setTimeout(
      () => {
        timedOut = true;
        controller.abort(new Error('approval timeout'));
      },
      Math.max(0, remaining),
    );
  };
  if (request.deadline !== null) arm(request.deadline);
  try {
    const decision = await channel(request, controller.signal);
    if (decision !== null && !timedOut) return decision;
  } finally {
    clearTimeout(timer);
    unfollow();
  }
  const pastDeadline = request.deadline !== null && Date.now() >= request.deadline;
  if (!timedOut && !pastDeadline) return null;
  const { timeoutMs, onTimeout } = ctx.approvalSettings;
  const waited = timeoutMs > 0 ? `within ${formatWait(timeoutMs)}` : 'before its deadline';
  return {
    approved: onTimeout === 'allow',
    by: 'timeout',
    reason: `no decision ${waited}${onTimeout === 'allow' ? '; approvals.onTimeout allows it' : ''}`,
  };
}

function formatWait(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
