/**
 * One tool call of a round: journal the call, run it (or refuse it), journal the exact result and
 * put it in the projection, or the short not-fitted text when it would not fit the budget. A
 * result that did not fit counts as a failed call: it starts no capture, ends no slice and
 * satisfies no completion requirement.
 */
import { hasErrorCode } from '../errors.ts';
import { RESULT_NOT_FITTED_TEXT } from '../projection/constants.ts';
import type { ApprovalDecision } from '../protocol/approvals.ts';
import type { ToolCall } from '../providers/types.ts';
import type { ReplayDisposition } from '../replay/types.ts';
import { COMPLETE_TASK, WAIT_FOR_INSTRUCTION } from '../tools/builtin/orchestration.ts';
import type { ApprovalAsk, ToolCallResult } from '../tools/toolbox.ts';
import type { Tool, ToolContext, ToolOutcome } from '../tools/types.ts';
import { approvalHook, recordDecision } from './approvals.ts';
import type { RunContext } from './context.ts';
import { formatToolResult } from './history-format.ts';
import { applyToolCall, applyToolResult } from './projection-events.ts';

/** What a handled call produced. */
export interface HandledCall {
  /** The tool's outcome; `ok` is false when the result was withheld for not fitting. */
  readonly outcome: ToolOutcome;
  /** The text sent back to the model. */
  readonly answer: string;
  /** Whether the call succeeded and its result reached the projection. */
  readonly succeeded: boolean;
}

/** Journals, runs (unless `refusal` says why not) and records one call of the model. */
export async function handleToolCall(
  ctx: RunContext,
  call: ToolCall,
  refusal: string | undefined,
): Promise<HandledCall> {
  const canonical = ctx.toolbox.canonicalName(call.name) ?? call.name;
  ctx.record({
    type: 'ToolCall',
    agentId: ctx.agentId,
    round: ctx.round,
    callId: call.id,
    name: canonical,
    modelName: call.name,
    ...(call.arguments === undefined ? { rawArgs: call.rawArguments } : { args: call.arguments }),
  });
  ctx.roundEntries.push(applyToolCall(ctx.projection, call.name, call.arguments, call.rawArguments));

  let outcome: ToolOutcome;
  let disposition: ReplayDisposition | undefined;
  let denied = false;
  if (refusal !== undefined) {
    outcome = { ok: false, text: refusal };
  } else if (call.arguments === undefined) {
    outcome = {
      ok: false,
      text: `Invalid arguments for \`${call.name}\`: not valid JSON (${call.parseError ?? 'unparseable'}). Call it again with a JSON object.`,
    };
  } else {
    const replay = ctx.replay;
    // Decided on the arguments the tool would get (canonical parameter names), not the model's:
    // the recording holds them that way, so a renamed parameter is still the same call.
    const answer = replay
      ? (tool: Tool, args: Readonly<Record<string, unknown>>) => {
          const decision = replay.decide(canonical, call.name, args, tool.readOnly);
          disposition = decision?.disposition;
          return decision?.outcome;
        }
      : undefined;
    const result = await runToolCall(
      ctx,
      call.id,
      call.name,
      call.arguments,
      approvalHook(ctx, call.id),
      answer,
    );
    outcome = result;
    denied = result.denied !== undefined;
  }
  const refused = refusal !== undefined || denied;
  const recorded = recordToolResult(ctx, call.id, canonical, call.name, outcome, refused, disposition);
  const accepted = recorded.accepted;
  outcome = recorded.outcome;
  const succeeded = outcome.ok && accepted && !refused;
  if (succeeded) ctx.succeededTools.add(canonical);
  return {
    outcome: accepted ? outcome : { ok: false, text: RESULT_NOT_FITTED_TEXT },
    answer: accepted ? outcome.text : RESULT_NOT_FITTED_TEXT,
    succeeded,
  };
}

/**
 * Runs one call through the toolbox with `approve` deciding the calls that ask, and journals a
 * denial that asked no one (a `deny` rule, `dontAsk`). A cancel while it runs answers at once.
 */
export function runToolCall(
  ctx: RunContext,
  callId: string,
  modelName: string,
  args: unknown,
  approve: (ask: ApprovalAsk) => Promise<ApprovalDecision>,
  answer?: (tool: Tool, args: Readonly<Record<string, unknown>>) => ToolOutcome | undefined,
): Promise<ToolOutcome & Pick<ToolCallResult, 'denied'>> {
  ctx.currentCallId = callId;
  // The call (and everything before it) is stored before the tool can act: a restarted agent then
  // knows it started, and never runs it again unasked. wait_for_instruction commits itself, with
  // its Waiting event, before it asks for the instruction (its first effect; nothing before it in
  // the toolbox acts, and an approval commits before it asks): one write per instruction, not two.
  const canonical = ctx.toolbox.canonicalName(modelName);
  if (canonical !== WAIT_FOR_INSTRUCTION) ctx.commitJournal();
  const call = (traceContext?: ToolContext['traceContext']) =>
    ctx.toolbox.call(modelName, args, {
      signal: ctx.signal,
      callId,
      fitsState: (key, text) => ctx.projection.fitsState(key, text, ctx.renderBudget),
      approve,
      ...(answer ? { answer } : {}),
      ...(traceContext ? { traceContext } : {}),
    });
  // Not an async function: a parked agent's wait_for_instruction call runs here. Routed tools
  // make no spans of their own, and a refused name has no span to be under.
  const inSpan =
    ctx.inToolSpan === undefined ||
    canonical === undefined ||
    canonical === COMPLETE_TASK ||
    canonical === WAIT_FOR_INSTRUCTION
      ? undefined
      : ctx.inToolSpan;
  const running: Promise<ToolOutcome & Pick<ToolCallResult, 'denied'>> = untilAborted(
    inSpan === undefined ? call() : inSpan(canonical ?? modelName, callId, call),
    ctx.signal,
    modelName,
  );
  return running.then((result) => {
    const denial = result.denied;
    if (denial && !denial.asked && !ctx.signal.aborted) {
      const canonical = ctx.toolbox.canonicalName(modelName) ?? modelName;
      recordDecision(ctx, callId, canonical, denial.rule, {
        approved: false,
        by: 'policy',
        reason: denial.reason,
      });
    }
    return result;
  });
}

/**
 * Adds a tool result to the projection (or the not-fitted text when it would exceed the budget) and
 * journals the exact result, with how a replay answered it (`replay`). Returns whether the result
 * itself reached the projection, and the outcome recorded: `outcome`, or a failure naming the tool
 * when its data or state cannot be journalled.
 */
export function recordToolResult(
  ctx: RunContext,
  callId: string,
  canonical: string,
  modelName: string,
  outcome: ToolOutcome,
  refused: boolean,
  replay?: ReplayDisposition,
): { readonly accepted: boolean; readonly outcome: ToolOutcome } {
  const stateUpdates = outcome.ok ? (outcome.stateUpdates ?? []) : [];
  const displayedStateKeys = outcome.ok ? (outcome.displayedStateKeys ?? []) : [];
  const entry = formatToolResult(modelName, outcome.ok, outcome.text);
  const accepted = ctx.projection.fitsCandidate(
    { text: entry, ok: outcome.ok, stateUpdates, displayedStateKeys },
    ctx.renderBudget,
  );
  const event = {
    type: 'ToolResult',
    agentId: ctx.agentId,
    round: ctx.round,
    callId,
    name: canonical,
    ok: outcome.ok,
    projectionAccepted: accepted,
    text: outcome.text,
    stateUpdates,
    displayedStateKeys,
    ...(refused ? { refused: true } : {}),
    ...(outcome.data === undefined ? {} : { data: outcome.data }),
    ...(replay === undefined ? {} : { replay }),
  } as const;
  try {
    ctx.record(event);
  } catch (error) {
    // A tool's data or state the journal cannot hold (a bigint, a cycle, nesting too deep): the
    // call fails, naming the tool, instead of the agent (nothing was appended: the journal
    // serializes before it writes).
    if (!hasErrorCode(error, 'journal_unserializable')) throw error;
    const why = error instanceof Error ? error.message : String(error);
    const failed = { ok: false, text: `${modelName} failed: its result cannot be journalled: ${why}` };
    return recordToolResult(ctx, callId, canonical, modelName, failed, refused, replay);
  }
  ctx.roundEntries.push(applyToolResult(ctx.projection, event, modelName));
  return { accepted, outcome };
}

/**
 * A tool that ignores its AbortSignal must not hold a cancelled agent: the loop stops waiting for
 * it (the call is recorded as cancelled) and lets it finish or hang on its own. One promise, settled
 * by the first of the tool and the abort: every tool result (an instruction's arrival among them)
 * goes through here, and the former `abortable(...).catch(...)` cost two more promise hops and a
 * once-listener (slower to add than an object listener).
 */
function untilAborted(work: Promise<ToolOutcome>, signal: AbortSignal, name: string): Promise<ToolOutcome> {
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.resolve(stoppedOutcome(signal, name));
  }
  return new Promise<ToolOutcome>((resolve) => {
    const listener = {
      handleEvent(): void {
        signal.removeEventListener('abort', listener);
        resolve(stoppedOutcome(signal, name));
      },
    };
    signal.addEventListener('abort', listener);
    work.then(
      (outcome) => {
        signal.removeEventListener('abort', listener);
        resolve(outcome);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', listener);
        resolve(
          signal.aborted
            ? stoppedOutcome(signal, name)
            : {
                ok: false,
                text: `${name} failed: ${error instanceof Error ? error.message : String(error)}`,
              },
        );
      },
    );
  });
}

/** What the model is told of a call its agent's signal stopped. */
function stoppedOutcome(signal: AbortSignal, name: string): ToolOutcome {
  return {
    ok: false,
    text: `${name} was ${signal.reason instanceof WallClockExceeded ? 'stopped: the agent ran out of time' : 'cancelled'}`,
  };
}

/** The abort reason of an agent whose `wallClockMs` passed. */
export class WallClockExceeded extends Error {
  constructor(readonly limitMs: number) {
    super(`the agent's time limit of ${limitMs} ms (wallClockMs) passed`);
    this.name = 'WallClockExceeded';
  }
}
