/**
 * Sessions: one agent, one projection, many user turns (seed 003's session loop). A session is an
 * agent whose instructions are user messages:
 *
 * 1. it waits for user message n, the way `wait_for_instruction` parks (journalled Waiting and
 *    Instructed, index n, on the same inbox: no provider call, no tokens while it waits);
 * 2. the message is appended to the history as `User: <text>`;
 * 3. the agent runs rounds until the turn ends as a task would: with a text answer, or with
 *    `complete_task` (the definition's completion requirement applies to each turn);
 * 4. the answer is journalled as TurnAnswered n and reported to the caller; per-turn state (the
 *    accepted result, the tools that succeeded) is cleared, while the history, keyed states,
 *    steps and budgets carry over; then it waits for message n + 1.
 *
 * A failure (a limit, a provider error) ends the session. Cancelled while it waits between turns
 * (`session.close()`, the supervisor closing), it ends Completed with its last answer; cancelled
 * in the middle of a turn, it ends Failed(cancelled). A turn alone can be cancelled through the
 * caller's `channels.turnSignal`: the request and tools in flight are aborted (journalled as any
 * cancel), TurnCancelled n is journalled, the history notes it ({@link TURN_CANCELLED_NOTE}), and
 * the session waits for message n + 1 with its history, states and budgets kept. Resumed from its
 * journal, it takes up the turn it was in, or waits again for the next message (repeating how the
 * last turn ended to the caller, in case that was lost with a thread).
 */
import { followSignal } from '../abort.ts';
import type { AuditEvent } from '../journal/events.ts';
import { COMPLETE_TASK } from '../tools/builtin/orchestration.ts';
import type { RunContext } from './context.ts';
import { cancelled, type Ending } from './decide.ts';
import { formatUser } from './history-format.ts';
import { end, type LoopOptions, runTurn } from './loop.ts';
import type { AgentChannels, AgentOutcome } from './types.ts';

/** Call id of a session's wait for user message n: no tool call has it. */
export const SESSION_WAIT_PREFIX = 'session-turn-';

/** The history entry a cancelled turn leaves, so the model knows its last answer was cut off. */
export const TURN_CANCELLED_NOTE = '[The user cancelled this turn before it finished.]';

/** Where a session stands. */
export interface SessionState {
  /** Turns answered: the index of the user message the session waits for when idle. */
  turns: number;
  /** The last answer: the session's outcome when it ends. */
  last: { readonly answer: string; readonly result: unknown } | undefined;
  /** No turn is running: the session waits for user message `turns`. */
  idle: boolean;
}

/** A new session's state. */
export function newSession(): SessionState {
  return { turns: 0, last: undefined, idle: true };
}

/** Runs a session from where it stands to its end. */
export async function runSession(
  run: RunContext,
  session: SessionState,
  options: LoopOptions,
  wait: NonNullable<AgentChannels['waitForInstruction']>,
  turnSignal?: AgentChannels['turnSignal'],
): Promise<AgentOutcome> {
  for (;;) {
    if (session.idle) {
      const text = await nextMessage(run, session, wait);
      if (text === null) return end(run, closed(session));
      session.idle = false;
    }
    const cancel = turnSignal?.(session.turns);
    const ending =
      cancel === undefined ? await runTurn(run, options) : await cancellableTurn(run, options, cancel);
    if (ending.kind === 'fail') {
      if (!(cancel?.aborted && ending.reason === 'cancelled' && !run.signal.aborted)) return end(run, ending);
      cancelTurn(run, session, cancel);
    } else answer(run, session, ending);
  }
}

/** One turn under the agent's signal and `cancel`: aborting either aborts what is in flight. */
async function cancellableTurn(run: RunContext, options: LoopOptions, cancel: AbortSignal): Promise<Ending> {
  const agentSignal = run.signal;
  // Not AbortSignal.any: on Node 20 its signals can be collected while listened to (src/abort.ts).
  const turn = new AbortController();
  const unfollowAgent = followSignal(agentSignal, turn);
  const unfollowCancel = followSignal(cancel, turn);
  run.signal = turn.signal;
  try {
    return await runTurn(run, options);
  } catch (error) {
    // What an aborted round may throw (a provider turn that ended on the abort refuses the answer
    // to its call) is the turn's cancel when only the turn was cancelled; else the agent's failure.
    if (cancel.aborted && !agentSignal.aborted)
      return { kind: 'fail', reason: 'cancelled', error: cancelled(cancel) };
    throw error;
  } finally {
    unfollowAgent();
    unfollowCancel();
    run.signal = agentSignal;
  }
}

/** Parks for user message `session.turns`; null when the session is cancelled or closed meanwhile. */
async function nextMessage(
  run: RunContext,
  session: SessionState,
  wait: NonNullable<AgentChannels['waitForInstruction']>,
): Promise<string | null> {
  const index = session.turns;
  const callId = `${SESSION_WAIT_PREFIX}${index}`;
  run.record({ type: 'Waiting', agentId: run.agentId, callId, index });
  run.commitJournal();
  let text: string | null;
  try {
    text = await wait(index, undefined, run.signal);
  } catch {
    text = null;
  }
  if (text === null || run.signal.aborted) return null;
  run.instructionsReceived = index + 1;
  run.record({ type: 'Instructed', agentId: run.agentId, index, text, callId });
  run.pushHistory(formatUser(text), 'user');
  return text;
}

function answer(run: RunContext, session: SessionState, ending: Extract<Ending, { kind: 'complete' }>): void {
  run.record({
    type: 'TurnAnswered',
    agentId: run.agentId,
    turn: session.turns,
    answer: ending.answer,
    ...(ending.result === undefined ? {} : { result: ending.result }),
  });
  session.last = { answer: ending.answer, result: ending.result };
  endTurn(run, session);
}

/** The turn was cancelled, not the agent: noted, and the session waits for the next message. */
function cancelTurn(run: RunContext, session: SessionState, cancel: AbortSignal): void {
  const reason: unknown = cancel.reason;
  // The note first: TurnCancelled is the turn's last event, as TurnAnswered is an answered one's.
  run.pushHistory(TURN_CANCELLED_NOTE, 'note');
  run.record({
    type: 'TurnCancelled',
    agentId: run.agentId,
    turn: session.turns,
    reason: reason instanceof Error ? reason.message : reason === undefined ? 'cancelled' : String(reason),
  });
  endTurn(run, session);
}

/** Per-turn state is cleared; the history, keyed states, steps and budgets carry over. */
function endTurn(run: RunContext, session: SessionState): void {
  session.turns += 1;
  session.idle = true;
  run.completion = undefined;
  run.succeededTools.clear();
  run.truncations = 0;
}

function closed(session: SessionState): Ending {
  return { kind: 'complete', answer: session.last?.answer ?? '', result: session.last?.result };
}

/**
 * Rebuilds a resumed session's state from its journal (after the projection was restored): a user
 * message received but not yet in the history is added, only the current turn's tool results
 * count toward finishing it, and an idle session repeats its last answer to the caller (not to
 * the journal), since the answer may have been lost with the thread that sent it.
 */
export function restoreSession(run: RunContext, session: SessionState, events: readonly AuditEvent[]): void {
  const messages = new Map<number, string>();
  let users = 0;
  let turnStart = 0;
  let last: AuditEvent | undefined;
  events.forEach((event, position) => {
    if (event.type === 'Instructed') {
      messages.set(event.index, event.text);
      turnStart = position + 1;
    }
    if (event.type === 'HistoryAppended' && event.kind === 'user') users += 1;
    if (event.type === 'TurnAnswered' || event.type === 'TurnCancelled') {
      session.turns = Math.max(session.turns, event.turn + 1);
      last = event;
    }
    if (event.type === 'TurnAnswered') session.last = { answer: event.answer, result: event.result };
  });
  for (let index = users; index < run.instructionsReceived; index += 1)
    run.pushHistory(formatUser(messages.get(index) ?? ''), 'user');
  session.idle = session.turns >= run.instructionsReceived;
  run.completion = undefined;
  run.succeededTools.clear();
  if (!session.idle) {
    for (const event of events.slice(turnStart)) {
      if (event.type !== 'ToolResult' || !event.ok || event.refused) continue;
      run.succeededTools.add(event.name);
      if (event.name === COMPLETE_TASK) run.completion = { value: event.data };
    }
  } else if (last?.type === 'TurnAnswered' || last?.type === 'TurnCancelled') {
    const { seq: _seq, ts: _ts, prev: _prev, hash: _hash, ...body } = last;
    run.announce(body);
  }
}
