/**
 * One round: one render of the projection and the provider turn sent on it. The turn may take
 * several model requests (steps): tool calls are executed and answered in the provider's native
 * protocol, and before the answers go back (starting the next request) the limits are checked
 * again and the request is journalled with the hash of its exact input. The slice rule, captures
 * and `complete_task` end the turn early.
 */
import { SLICE_REFUSAL } from '../constants.ts';
import type { SerializedError } from '../errors.ts';
import { extend } from '../objects.ts';
import { DEFAULT_MAX_OUTPUT_CHARS } from '../providers/constants.ts';
import type { StopReason, ToolChoice, TurnEvent } from '../providers/types.ts';
import type { CaptureRequest, ToolOutcome, ToolSpec } from '../tools/types.ts';
import { neverSent, type RequestOutput, requestReceipt } from './accounting.ts';
import type { RunContext } from './context.ts';
import { limitVerdict } from './decide.ts';
import { formatAssistant, formatCapturePrompt } from './history-format.ts';
import { handleToolCall, recordToolResult } from './tool-calls.ts';

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
  /** Tool calls that succeeded (and whose results reached the projection) this round. */
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
/**
 * How long a turn may go without its next event once the agent's signal aborted (cancel,
 * `wallClockMs`) before the loop stops waiting for its provider (see AbortGuard).
 */
export const ABORTED_TURN_GRACE_MS = 1_000;
/** Events of types the loop does not know that one turn may send (see `unbounded`). */
export const MAX_IGNORED_TURN_EVENTS = 10_000;
const CAPTURE_REFUSAL = 'No tools can be called during a capture: answer with text only.';
const CAPTURE_PENDING_REFUSAL =
  'A tool is waiting for a freeform answer. End this slice; the next turn asks for that answer.';
const COMPLETED_REFUSAL = 'The task is already complete: complete_task succeeded. Stop now.';

/** Runs one round and records everything it does. */
export async function runRound(ctx: RunContext, options: RoundOptions = {}): Promise<RoundResult> {
  ctx.round += 1;
  ctx.roundsUsed += 1;
  const tools: readonly ToolSpec[] = options.capture ? NO_TOOLS : ctx.specs;
  const toolChoice: ToolChoice | undefined = options.capture ? 'none' : options.toolChoice;
  if (options.capture) {
    const { modelName, request } = options.capture;
    ctx.pushHistory(
      formatCapturePrompt(modelName, request.prompt),
      'capture_prompt',
      [],
      options.capture.callId,
    );
  }
  const input = ctx.projection.render();
  let request = 1;
  submit(ctx, { input, tools, toolChoice, request, capture: options.capture });

  const turn = ctx.provider.turn(
    extend(
      ctx.modelSettings,
      { model: ctx.model, system: ctx.system, input, task: ctx.projection.task, tools },
      toolChoice === undefined ? {} : { toolChoice },
    ),
    ctx.signal,
  );

  let pendingText = '';
  let reasoning = '';
  let toolCalls = 0;
  let succeeded = 0;
  let sliceEnded = false;
  let stopped = false;
  let expected = 0;
  let answered = 0;
  let responses = 0;
  let ignored = 0;
  let capture: PendingCapture | undefined;
  const stop = (): void => {
    stopped = true;
    turn.stop();
  };
  const flushText = (): void => {
    const text = pendingText.trim();
    pendingText = '';
    if (text !== '' && !options.capture) ctx.pushHistory(formatAssistant(text), 'assistant');
  };
  const account = (receipt: Parameters<typeof requestReceipt>[1], output: RequestOutput, end?: TurnEvent) => {
    const journalled = requestReceipt(ctx, receipt, output);
    ctx.addReceipt(journalled);
    ctx.record({
      type: 'ProviderReceipt',
      agentId: ctx.agentId,
      round: ctx.round,
      step: ctx.stepsUsed,
      receipt: journalled,
      ...(end?.type === 'response' ? { stopReason: end.stopReason } : {}),
      ...(end?.type === 'error' ? { errorCode: end.error.code } : {}),
    });
  };

  const events = new AbortGuard(turn, ctx.signal);
  try {
    for await (const event of events) {
      switch (event.type) {
        case 'text_delta':
          pendingText += event.text;
          if (pendingText.length + reasoning.length > DEFAULT_MAX_OUTPUT_CHARS)
            return unbounded(toolCalls, succeeded, capture, 'response_too_large', 'streamed more than');
          break;
        case 'reasoning_delta':
          reasoning += event.text;
          if (pendingText.length + reasoning.length > DEFAULT_MAX_OUTPUT_CHARS)
            return unbounded(toolCalls, succeeded, capture, 'response_too_large', 'streamed more than');
          break;
        case 'usage':
          break;
        case 'response': {
          responses += 1;
          // Pushed, not map()ped: see submit (the accounting's optimized loop deopted on it).
          const toolArguments: string[] = [];
          for (const call of event.toolCalls) toolArguments.push(call.rawArguments);
          account(event.receipt, { text: event.text, reasoning, toolArguments }, event);
          reasoning = '';
          expected = event.toolCalls.length;
          answered = 0;
          break;
        }
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
          const handled = await handleToolCall(ctx, event, refusal);
          const outcome: ToolOutcome = handled.outcome;
          // Cancelled (or out of time) while the tool ran: nothing more goes back to the model.
          if (ctx.signal.aborted) stop();
          if (handled.succeeded) succeeded += 1;
          if (refusal === undefined) {
            if (outcome.ok && (outcome.stateUpdates?.length ?? 0) > 0) {
              sliceEnded = true;
              stop();
            }
            if (outcome.capture && outcome.ok) {
              const canonical = ctx.toolbox.canonicalName(event.name) ?? event.name;
              capture = {
                callId: event.id,
                name: canonical,
                modelName: event.name,
                request: outcome.capture,
              };
              stop();
            }
            if (ctx.completion) stop();
          }
          answered += 1;
          // The last answer of a response sends the next request, unless the turn stops here.
          if (answered === expected && !stopped) {
            if (limitVerdict(ctx) !== undefined) stop();
            else {
              request += 1;
              submit(ctx, { input, tools, toolChoice, request, capture: options.capture });
            }
          }
          turn.respond(event.id, handled.answer);
          break;
        }
        case 'completed':
          // A provider not built on createTurn sends no response events: its turn is one receipt.
          if (responses === 0) {
            account(
              event.receipt,
              { text: event.text, reasoning, toolArguments: [] },
              {
                type: 'response',
                index: 0,
                text: event.text,
                toolCalls: [],
                stopReason: event.stopReason,
                receipt: event.receipt,
              },
            );
          }
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
          if (event.request) {
            const unseenChars = event.keptOutputChars ?? 0;
            const unsent = event.unsent === true || neverSent(event.error);
            account(
              event.request,
              { text: pendingText, reasoning, toolArguments: [], unseenChars, unsent },
              event,
            );
          }
          // The agent ends with this error: the failed request's partial text (up to maxOutputChars
          // of whatever the server sent) is counted in its receipt, not pushed into the projection.
          return { text: '', stopReason: undefined, toolCalls, succeeded, error: event.error, capture };
        default:
          // An event this loop does not know (a provider module's own): ignored, but not for ever.
          ignored += 1;
          if (ignored > MAX_IGNORED_TURN_EVENTS)
            return unbounded(toolCalls, succeeded, capture, 'bad_response', 'sent more than');
      }
    }
  } finally {
    events.dispose();
  }
  // Providers end every turn with a terminal event; reaching here is a provider bug.
  return turnFailed(
    { toolCalls, succeeded, capture },
    'bad_response',
    'The turn ended without a terminal event',
  );
}

/** A round that ends with a provider error of the loop's own finding. */
function turnFailed(
  sofar: Pick<RoundResult, 'toolCalls' | 'succeeded' | 'capture'>,
  code: string,
  message: string,
  fields: Record<string, unknown> = {},
): RoundResult {
  return {
    text: '',
    stopReason: undefined,
    toolCalls: sofar.toolCalls,
    succeeded: sofar.succeeded,
    error: { name: 'ProviderError', code, message, fields },
    capture: sofar.capture,
  };
}

/**
 * Ends a turn whose provider went past a bound the built-in providers keep themselves (a provider
 * module's turn is checked here): output beyond DEFAULT_MAX_OUTPUT_CHARS, or more than
 * MAX_IGNORED_TURN_EVENTS events of unknown types, which would otherwise hold the thread (each one
 * a microtask, so not even its heartbeat runs) until the supervisor terminates it.
 */
function unbounded(
  toolCalls: number,
  succeeded: number,
  capture: PendingCapture | undefined,
  code: 'response_too_large' | 'bad_response',
  what: string,
): RoundResult {
  const tooLarge = code === 'response_too_large';
  const limit = tooLarge
    ? `${DEFAULT_MAX_OUTPUT_CHARS} characters of output`
    : `${MAX_IGNORED_TURN_EVENTS} events of types the loop does not know`;
  return turnFailed(
    { toolCalls, succeeded, capture },
    code,
    `The provider ${what} ${limit} in one turn`,
    tooLarge ? { maxOutputChars: DEFAULT_MAX_OUTPUT_CHARS } : {},
  );
}

/**
 * A turn's events, with a bound on a provider that ignores the agent's abort: once the signal
 * aborts (cancel, `wallClockMs`), the provider has ABORTED_TURN_GRACE_MS to deliver its next event
 * (one that heeds the signal ends its turn at once, with the aborted request's receipt); after that
 * the wait ends with the signal's reason, so no provider, however broken, keeps its agent from
 * ending at its limit or its cancel (a provider module's turn that never settles held its agent,
 * and a cancel then ended only when the grace timer took down the whole thread).
 *
 * A class, not an async generator: every event of every request passes through it. Each wait is
 * one promise whose reject the guard keeps, and nothing accumulates over a long stream.
 */
class AbortGuard implements AsyncIterableIterator<TurnEvent> {
  readonly #events: AsyncIterator<TurnEvent>;
  readonly #signal: AbortSignal;
  #reject: ((reason: unknown) => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #gaveUp = false;

  constructor(turn: AsyncIterable<TurnEvent>, signal: AbortSignal) {
    this.#events = turn[Symbol.asyncIterator]();
    this.#signal = signal;
    if (signal.aborted) this.handleEvent();
    else signal.addEventListener('abort', this, { once: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The signal aborted: the provider's grace period starts. */
  handleEvent(): void {
    this.#timer ??= setTimeout(() => {
      this.#gaveUp = true;
      this.#reject?.(this.#signal.reason);
    }, ABORTED_TURN_GRACE_MS);
  }

  next(): Promise<IteratorResult<TurnEvent>> {
    if (this.#gaveUp) return Promise.reject(this.#signal.reason);
    return new Promise((resolve, reject) => {
      this.#reject = reject;
      this.#events.next().then(resolve, reject);
    });
  }

  /** Ends the turn as `for await` does when left early; a provider given up on is not waited for. */
  return(): Promise<IteratorResult<TurnEvent>> {
    const ended = this.#events.return?.();
    if (ended === undefined) return Promise.resolve({ done: true, value: undefined });
    if (!this.#gaveUp) return ended;
    ended.catch(() => {});
    return Promise.resolve({ done: true, value: undefined });
  }

  /** Stops listening and timing; called once the turn is over, however it ended. */
  dispose(): void {
    this.#signal.removeEventListener('abort', this);
    clearTimeout(this.#timer);
    this.#reject = undefined;
  }
}

/** Journals a model request about to be sent: one step, with the hash of its exact input. */
function submit(
  ctx: RunContext,
  request: {
    readonly input: string;
    readonly tools: readonly ToolSpec[];
    readonly toolChoice: ToolChoice | undefined;
    readonly request: number;
    readonly capture: PendingCapture | undefined;
  },
): void {
  if (request.request === 1) ctx.roundEntries = [];
  ctx.stepsUsed += 1;
  // Pushed, not map()ped: an optimized map() returns a holey array where the interpreter's is
  // packed, and the journal's serializer, optimized on the first ones, deopted on it.
  const tools: string[] = [];
  for (const tool of request.tools) tools.push(tool.name);
  ctx.record({
    type: 'InferenceSubmitted',
    agentId: ctx.agentId,
    round: ctx.round,
    step: ctx.stepsUsed,
    request: request.request,
    inputHash: ctx.hashInput(request.input, request.tools, ctx.roundEntries),
    estimatedTokens: ctx.projection.estimatedTokens(),
    tools,
    ...(request.toolChoice === undefined ? {} : { toolChoice: request.toolChoice }),
    ...(request.capture ? { captureFor: request.capture.callId } : {}),
    ...(Object.keys(ctx.modelSettings).length === 0 ? {} : { modelSettings: ctx.modelSettings }),
  });
  // Every request is in the journal before it is sent (and everything recorded before it).
  ctx.commitJournal();
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
  const recorded = recordToolResult(ctx, capture.callId, capture.name, capture.modelName, outcome, false);
  if (recorded.accepted && recorded.outcome.ok) ctx.succeededTools.add(capture.name);
}
