/**
 * One round: one provider turn on a fresh render. Tool calls are executed and answered in the
 * provider's native protocol; the slice rule, captures and `complete_task` end the turn early.
 */

import { abortable } from '../abort.ts';
import { SLICE_REFUSAL } from '../constants.ts';
import type { SerializedError } from '../errors.ts';
import { RESULT_NOT_FITTED_TEXT } from '../projection/constants.ts';
import type { StopReason, ToolCall, ToolChoice, Turn } from '../providers/types.ts';
import type { CaptureRequest, ToolOutcome, ToolSpec } from '../tools/types.ts';
import type { RunContext } from './context.ts';
import { formatAssistant, formatToolResult } from './history-format.ts';
import { applyToolCall, applyToolResult } from './projection-events.ts';

/** A capture requested by a tool call, to run as the next round. */
export interface PendingCapture {
  readonly callId: string;
  readonly name: string;
  readonly modelName: string;
  readonly request: CaptureRequest;
}

/** How a round ended. */
export interface RoundResult {
  /** Text of the model's last response. */
  readonly text: string;
  readonly stopReason: StopReason | undefined;
  /** Tool calls the model made this round (executed or refused). */
  readonly toolCalls: number;
  /** Tool calls that succeeded this round. */
  readonly succeeded: number;
  readonly error: SerializedError | undefined;
  /** A tool asked for a capture: the next round runs without tools. */
  readonly capture: PendingCapture | undefined;
}

export interface RoundOptions {
  readonly toolChoice?: ToolChoice;
  /** Run as the capture turn of this pending capture: no tools offered. */
  readonly capture?: PendingCapture;
}

const NO_TOOLS: readonly ToolSpec[] = [];
const CAPTURE_REFUSAL = 'No tools can be called during a capture: answer with text only.';
const CAPTURE_PENDING_REFUSAL =
  'A tool is waiting for a freeform answer. End this slice; the next turn asks for that answer.';
const COMPLETED_REFUSAL = 'The task is already complete: complete_task succeeded. Stop now.';

/** Runs one round and records everything it does. */
export async function runRound(ctx: RunContext, options: RoundOptions = {}): Promise<RoundResult> {
  ctx.round += 1;
  ctx.roundsUsed += 1;
  const round = ctx.round;
  const tools: readonly ToolSpec[] = options.capture ? NO_TOOLS : ctx.specs;
  const toolChoice: ToolChoice | undefined = options.capture ? 'none' : options.toolChoice;
  const input = ctx.projection.render();
  ctx.record({
    type: 'InferenceSubmitted',
    agentId: ctx.agentId,
    round,
    inputHash: ctx.hashInput(input, tools),
    estimatedTokens: ctx.projection.estimatedTokens(),
    tools: tools.map((tool) => tool.name),
    ...(toolChoice === undefined ? {} : { toolChoice }),
    ...(options.capture ? { captureFor: options.capture.callId } : {}),
  });

  const turn = ctx.provider.turn(
    {
      model: ctx.model,
      system: ctx.system,
      input,
      tools,
      ...(toolChoice === undefined ? {} : { toolChoice }),
    },
    ctx.signal,
  );

  let pendingText = '';
  let toolCalls = 0;
  let succeeded = 0;
  let sliceEnded = false;
  let capture: PendingCapture | undefined;
  const flushText = (): void => {
    const text = pendingText.trim();
    pendingText = '';
    if (text !== '' && !options.capture) ctx.pushHistory(formatAssistant(text), 'assistant');
  };

  for await (const event of turn) {
    switch (event.type) {
      case 'text_delta':
        pendingText += event.text;
        break;
      case 'reasoning_delta':
      case 'usage':
        break;
      case 'tool_call': {
        flushText();
        toolCalls += 1;
        const refusal = options.capture
          ? CAPTURE_REFUSAL
          : capture
            ? CAPTURE_PENDING_REFUSAL
            : sliceEnded
              ? SLICE_REFUSAL
              : ctx.completion
                ? COMPLETED_REFUSAL
                : undefined;
        const outcome = await handleToolCall(ctx, turn, event, refusal);
        // Cancelled while the tool ran: nothing more goes back to the model.
        if (ctx.signal.aborted) turn.stop();
        if (outcome.ok && refusal === undefined) succeeded += 1;
        if (refusal !== undefined) break;
        if (outcome.ok && (outcome.stateUpdates?.length ?? 0) > 0) {
          sliceEnded = true;
          turn.stop();
        }
        if (outcome.capture && outcome.ok) {
          const canonical = ctx.toolbox.canonicalName(event.name) ?? event.name;
          capture = { callId: event.id, name: canonical, modelName: event.name, request: outcome.capture };
          turn.stop();
        }
        if (ctx.completion) turn.stop();
        break;
      }
      case 'completed':
        ctx.addReceipt(event.receipt);
        ctx.record({
          type: 'ProviderReceipt',
          agentId: ctx.agentId,
          round,
          receipt: event.receipt,
          stopReason: event.stopReason,
        });
        if (options.capture) {
          await finishCapture(ctx, options.capture, event.text.length > 0 ? event.text : pendingText);
          pendingText = '';
        } else {
          if (pendingText.trim() === '' && event.text.trim() !== '' && toolCalls === 0)
            pendingText = event.text;
          flushText();
        }
        return {
          text: event.text,
          stopReason: event.stopReason,
          toolCalls,
          succeeded,
          error: undefined,
          capture,
        };
      case 'error':
        ctx.addReceipt(event.receipt);
        ctx.record({ type: 'ProviderReceipt', agentId: ctx.agentId, round, receipt: event.receipt });
        flushText();
        return { text: '', stopReason: undefined, toolCalls, succeeded, error: event.error, capture };
    }
  }
  // Providers end every turn with a terminal event; reaching here is a provider bug.
  return {
    text: '',
    stopReason: undefined,
    toolCalls,
    succeeded,
    error: {
      name: 'ProviderError',
      code: 'bad_response',
      message: 'The turn ended without a terminal event',
      fields: {},
    },
    capture,
  };
}

async function handleToolCall(
  ctx: RunContext,
  turn: Turn,
  call: ToolCall,
  refusal: string | undefined,
): Promise<ToolOutcome> {
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
  applyToolCall(ctx.projection, call.name, call.arguments, call.rawArguments);

  let outcome: ToolOutcome;
  if (refusal !== undefined) {
    outcome = { ok: false, text: refusal };
  } else if (call.arguments === undefined) {
    outcome = {
      ok: false,
      text: `Invalid arguments for \`${call.name}\`: not valid JSON (${call.parseError ?? 'unparseable'}). Call it again with a JSON object.`,
    };
  } else {
    ctx.currentCallId = call.id;
    outcome = await untilAborted(
      ctx.toolbox.call(call.name, call.arguments, { signal: ctx.signal }),
      ctx.signal,
      call.name,
    );
  }
  const accepted = recordToolResult(ctx, call.id, canonical, call.name, outcome, refusal !== undefined);
  turn.respond(call.id, accepted ? outcome.text : RESULT_NOT_FITTED_TEXT);
  if (outcome.ok && refusal === undefined) ctx.succeededTools.add(canonical);
  return outcome;
}

/**
 * Adds a tool result to the projection (or the not-fitted text when it would exceed the budget) and
 * journals the exact result. Returns whether the result itself reached the projection.
 */
export function recordToolResult(
  ctx: RunContext,
  callId: string,
  canonical: string,
  modelName: string,
  outcome: ToolOutcome,
  refused: boolean,
): boolean {
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
  } as const;
  ctx.record(event);
  applyToolResult(ctx.projection, event, modelName);
  return accepted;
}

async function finishCapture(ctx: RunContext, capture: PendingCapture, text: string): Promise<void> {
  let outcome: ToolOutcome;
  try {
    outcome = await capture.request.onCapture(text);
  } catch (error) {
    outcome = {
      ok: false,
      text: `${capture.modelName} failed: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  ctx.pushHistory(`Captured answer for ${capture.modelName}: ${text}`, 'capture', [], capture.callId);
  const accepted = recordToolResult(ctx, capture.callId, capture.name, capture.modelName, outcome, false);
  if (accepted && outcome.ok) ctx.succeededTools.add(capture.name);
}

/**
 * A tool that ignores its AbortSignal must not hold a cancelled agent: the loop stops waiting for
 * it (the call is recorded as cancelled) and lets it finish or hang on its own.
 */
function untilAborted(work: Promise<ToolOutcome>, signal: AbortSignal, name: string): Promise<ToolOutcome> {
  return abortable(work, signal).catch((error: unknown) =>
    signal.aborted
      ? { ok: false, text: `${name} was cancelled` }
      : { ok: false, text: `${name} failed: ${error instanceof Error ? error.message : String(error)}` },
  );
}
