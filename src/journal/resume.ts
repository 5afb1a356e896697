/**
 * What a loop needs to continue an agent from its journal. The journal is the only state that
 * survives a crash, so everything here is derived from events alone.
 *
 * How the loop resumes (docs/journal.md has the full procedure):
 * 1. `ended` set: do not run anything; report the recorded outcome.
 * 2. Open the journal with `JournalWriter.open` (it cuts a torn last line and continues the chain)
 *    and append `Resumed { nextRound, pendingCallIds, truncatedBytes }`.
 * 3. Build a fresh projection from `started.context` and `started.task` and replay `projection` in
 *    order without journalling (`ProjectionReplay` in src/loop/projection-events.ts: a ToolCall
 *    pushes its entry, a ToolResult applies its state updates and entry, HistoryAppended pushes).
 * 4. For each of `pendingCalls`, record a failed ToolResult with {@link INTERRUPTED_TOOL_RESULT}
 *    (pushed to the projection like any failed result): it may or may not have taken effect, so it
 *    is neither silently dropped nor run again. A host tool call is asked for instead (the
 *    `hostToolOutcome` channel): the supervisor ran it and keeps its outcome by call id.
 * 4b. For each of `deniedCalls`, record its denial as the failed result (it never ran); for
 *    `pendingApproval`, wait again for the decision on the same request, then run or deny the call.
 * 5. `waiting` set: if its instruction already arrived, answer the call with it; otherwise wait
 *    again for instruction `waiting.index` (the supervisor's inbox is indexed, so this is idempotent).
 * 6. Continue at `nextRound` with a fresh render; count `stepsUsed` against maxSteps and `totals`
 *    against budgets. A call id in `finishedCalls` is answered with its recorded result, never run.
 */
import { SystemError } from '../errors.ts';
import type { AuditEvent, EventOf } from './events.ts';
import { addReceipt, type UsageTotals, ZERO_USAGE_TOTALS } from './usage.ts';

/** A `wait_for_instruction` call that had not returned when the journal ended. */
export interface PendingWait {
  readonly callId: string;
  /** The instruction number the wait asked for. */
  readonly index: number;
  /** The instruction's text when it had already arrived (its Instructed event was written). */
  readonly instruction: string | undefined;
}

/** A tool call whose approval was asked for and not decided when the journal ended. */
export interface PendingApproval {
  readonly call: EventOf<'ToolCall'>;
  readonly request: EventOf<'ApprovalRequested'>;
}

/** A tool call that was denied and has no result yet: it is answered with its denial, never run. */
export interface DeniedCall {
  readonly call: EventOf<'ToolCall'>;
  readonly decision: EventOf<'ApprovalDecided'>;
}

/** An event that changes the projection. */
export type ProjectionEvent =
  | EventOf<'HistoryAppended'>
  | EventOf<'StateChanged'>
  | EventOf<'ToolCall'>
  | EventOf<'ToolResult'>;

/** The loop state recorded in a journal. */
export interface ResumeState {
  readonly agentId: string;
  /** The first event: definition, model, context, task, system prompt, tools. */
  readonly started: EventOf<'Started'>;
  /** The terminal event when the agent already ended. */
  readonly ended: EventOf<'Completed'> | EventOf<'Failed'> | undefined;
  /** The round to run next: one past the highest round recorded (1 for a journal with none). */
  readonly nextRound: number;
  /** Distinct rounds that reached the provider (InferenceSubmitted). */
  readonly roundsUsed: number;
  /**
   * Model requests sent or about to be sent: what counts toward maxSteps. Format 3 counts every
   * InferenceSubmitted (a request cut off by a crash counts: it may have reached the server);
   * format 2 counts each round's receipt's `requests`, or 1 for a round that has no receipt.
   */
  readonly stepsUsed: number;
  /** Tool calls with a recorded result, by call id: never execute these again. */
  readonly finishedCalls: ReadonlyMap<string, EventOf<'ToolResult'>>;
  /**
   * Tool calls that started but have no result, oldest first: the wait in `waiting`, the call in
   * `pendingApproval` and the `deniedCalls` excepted. An approved call is among them: it may have
   * started running.
   */
  readonly pendingCalls: readonly EventOf<'ToolCall'>[];
  /** A call waiting for its approval: the resumed agent waits again under the same request id. */
  readonly pendingApproval: PendingApproval | undefined;
  /** Denied calls without a result: answered with their denial, never run. */
  readonly deniedCalls: readonly DeniedCall[];
  /** ApprovalRequested events so far. */
  readonly approvalsRequested: number;
  /**
   * Events that change the projection, in order, to replay onto a projection of `started.context`
   * and `started.task` (HistoryAppended, StateChanged, ToolCall, ToolResult).
   */
  readonly projection: readonly ProjectionEvent[];
  /** Usage and cost of every recorded provider turn. */
  readonly totals: UsageTotals;
  /** Instructions received so far: the index the next wait asks for. */
  readonly instructionsReceived: number;
  readonly waiting: PendingWait | undefined;
  /** How many times the agent was resumed before (Resumed events). */
  readonly resumes: number;
  readonly lastEvent: AuditEvent;
}

/**
 * Derives the loop state from an agent's events (as `readJournal` returns them). Throws
 * `SystemError('journal_not_started')` when the first event is not Started.
 */
export function resumeState(events: readonly AuditEvent[]): ResumeState {
  const started = events[0];
  if (started?.type !== 'Started') {
    throw new SystemError(
      'journal_not_started',
      `Expected a journal that begins with a Started event, found ${started ? started.type : 'no events'}`,
      { found: started?.type },
    );
  }
  let ended: EventOf<'Completed'> | EventOf<'Failed'> | undefined;
  let maxRound = 0;
  const submittedRounds = new Set<number>();
  /** Format 3 InferenceSubmitted events (they carry `step`). */
  let steps = 0;
  /** Format 2: requests per round, from receipts. */
  const roundRequests = new Map<number, number>();
  const calls = new Map<string, EventOf<'ToolCall'>>();
  const finishedCalls = new Map<string, EventOf<'ToolResult'>>();
  const projection: ProjectionEvent[] = [];
  const waits = new Map<string, EventOf<'Waiting'>>();
  const instructionsByCall = new Map<string, string>();
  let instructionsReceived = 0;
  const requests = new Map<string, EventOf<'ApprovalRequested'>>();
  const decisions = new Map<string, EventOf<'ApprovalDecided'>>();
  let totals = ZERO_USAGE_TOTALS;
  let resumes = 0;

  for (const event of events) {
    if ('round' in event && typeof event.round === 'number') maxRound = Math.max(maxRound, event.round);
    switch (event.type) {
      case 'InferenceSubmitted':
        submittedRounds.add(event.round);
        if (event.step !== undefined) steps += 1;
        else roundRequests.set(event.round, roundRequests.get(event.round) ?? 0);
        break;
      case 'ToolCall':
        calls.set(event.callId, event);
        projection.push(event);
        break;
      case 'ToolResult':
        finishedCalls.set(event.callId, event);
        projection.push(event);
        break;
      case 'ProviderReceipt':
        totals = addReceipt(totals, event.receipt);
        if (event.step === undefined) {
          roundRequests.set(event.round, (roundRequests.get(event.round) ?? 0) + event.receipt.requests);
        }
        break;
      case 'HistoryAppended':
      case 'StateChanged':
        projection.push(event);
        break;
      case 'Waiting':
        waits.set(event.callId, event);
        break;
      case 'Instructed':
        instructionsReceived = Math.max(instructionsReceived, event.index + 1);
        if (event.callId !== undefined) instructionsByCall.set(event.callId, event.text);
        break;
      case 'ApprovalRequested':
        requests.set(event.callId, event);
        break;
      case 'ApprovalDecided':
        decisions.set(event.callId, event);
        break;
      case 'Resumed':
        resumes += 1;
        maxRound = Math.max(maxRound, event.nextRound - 1);
        break;
      case 'Completed':
      case 'Failed':
        ended ??= event;
        break;
    }
  }

  let waiting: PendingWait | undefined;
  for (const wait of waits.values()) {
    // A session's wait for the next user message has no tool call: it is not a pending call.
    if (finishedCalls.has(wait.callId) || !calls.has(wait.callId)) continue;
    waiting = { callId: wait.callId, index: wait.index, instruction: instructionsByCall.get(wait.callId) };
  }
  const unfinished = [...calls.values()].filter(
    (call) => !finishedCalls.has(call.callId) && call.callId !== waiting?.callId,
  );
  let pendingApproval: PendingApproval | undefined;
  const deniedCalls: DeniedCall[] = [];
  const pendingCalls: EventOf<'ToolCall'>[] = [];
  for (const call of unfinished) {
    const decision = decisions.get(call.callId);
    const request = requests.get(call.callId);
    if (decision && !decision.approved) deniedCalls.push({ call, decision });
    else if (!decision && request) pendingApproval = { call, request };
    else pendingCalls.push(call);
  }

  return {
    agentId: started.agentId,
    started,
    ended,
    nextRound: maxRound + 1,
    roundsUsed: submittedRounds.size,
    stepsUsed: steps + [...roundRequests.values()].reduce((sum, count) => sum + Math.max(1, count), 0),
    finishedCalls,
    pendingCalls,
    pendingApproval,
    deniedCalls,
    approvalsRequested: requests.size,
    projection,
    totals,
    instructionsReceived,
    waiting,
    resumes,
    lastEvent: events[events.length - 1] ?? started,
  };
}
