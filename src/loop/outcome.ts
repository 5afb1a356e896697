/**
 * Outcomes built outside the loop: by the supervisor and the engines for agents that ended without
 * their loop saying so (never started, cancelled while queued, lost with their thread). The usage
 * of such an outcome is zero until its builder fills in what the agent's journal says it spent
 * ({@link journalledOutcome}: the thread engine's `journalOutcome` in
 * engines/threads/journal-end.ts, the redis engine's ends of agents whose worker did not end them).
 */
import type { SerializedError } from '../errors.ts';
import { type AuditEvent, type AuditEventInput, type EventOf, isTerminal } from '../journal/events.ts';
import { resumeState } from '../journal/resume.ts';
import { knownCost } from '../journal/usage.ts';
import { ZERO_USAGE } from '../providers/receipt.ts';
import type { Usage } from '../providers/types.ts';
import type { AgentOutcome, FailureReason, InheritedSpend } from './types.ts';

/**
 * Why an agent whose run could not start or went on no further failed, from the error that stopped
 * it: `invalid_request` for a user's mistake (a UserError: a tool or provider module that does not
 * load, an option that is wrong), which a retry fails the same way; `crashed` for anything else.
 */
export function unrunReason(error: SerializedError): FailureReason {
  return error.name === 'UserError' ? 'invalid_request' : 'crashed';
}

/**
 * What an agent (an outcome, a result line) spent itself: its `usage` and `costUsd` less what a
 * retry inherited with the journal it continues ({@link InheritedSpend}). The cost is null when
 * the agent's is (an unpriced request, its own or inherited, leaves its own share unknown).
 */
export function ownSpend(spend: {
  readonly usage: Usage;
  readonly costUsd: number | null;
  readonly inherited?: InheritedSpend | undefined;
}): InheritedSpend {
  const { usage, costUsd, inherited } = spend;
  if (inherited === undefined) return { usage, costUsd };
  const less = (a: number, b: number): number => Math.max(0, a - b);
  return {
    usage: {
      ...usage,
      inputTokens: less(usage.inputTokens, inherited.usage.inputTokens),
      outputTokens: less(usage.outputTokens, inherited.usage.outputTokens),
      cachedInputTokens: less(usage.cachedInputTokens, inherited.usage.cachedInputTokens),
      reasoningTokens: less(usage.reasoningTokens, inherited.usage.reasoningTokens),
    },
    costUsd: costUsd === null || inherited.costUsd === null ? null : Math.max(0, costUsd - inherited.costUsd),
  };
}

/** A Failed outcome with `reason` and `error`. */
export function failedOutcome(agentId: string, reason: FailureReason, error: SerializedError): AgentOutcome {
  return { status: 'failed', agentId, reason, error, usage: ZERO_USAGE, costUsd: 0, rounds: 0 };
}

/** A Completed outcome for the accepted `complete_task` result `value`. */
export function completedOutcome(agentId: string, value: unknown): AgentOutcome {
  return {
    status: 'completed',
    agentId,
    answer: JSON.stringify(value),
    result: value,
    usage: ZERO_USAGE,
    costUsd: 0,
    rounds: 0,
  };
}

/**
 * The error of an agent cancelled for `reason` (code `cancelled`): a SystemError's plain data, built
 * without making the error. A Ctrl-C gives one to every spec a fan-out still has queued, 18,000 of
 * a 20,000-task data set; an Error per spec, stack trace included, was thrown away at once.
 */
export function cancelledError(reason: string): SerializedError {
  return { name: 'SystemError', code: 'cancelled', message: `Cancelled: ${reason}`, fields: { reason } };
}

/** The Completed or Failed event of an outcome. */
export function terminalEvent(outcome: AgentOutcome): AuditEventInput {
  const { status: _status, ...rest } = outcome;
  return outcome.status === 'completed'
    ? { type: 'Completed', ...(rest as Omit<Extract<AgentOutcome, { status: 'completed' }>, 'status'>) }
    : { type: 'Failed', ...(rest as Omit<Extract<AgentOutcome, { status: 'failed' }>, 'status'>) };
}

/** The outcome a journal recorded for an agent that already ended (its Completed or Failed event). */
export function recordedOutcome(ended: EventOf<'Completed'> | EventOf<'Failed'>): AgentOutcome {
  const totals = {
    usage: ended.usage,
    costUsd: ended.costUsd,
    rounds: ended.rounds,
    steps: ended.steps ?? ended.rounds,
    ...(ended.replay === undefined ? {} : { replay: ended.replay }),
  };
  return ended.type === 'Completed'
    ? { status: 'completed', agentId: ended.agentId, answer: ended.answer, result: ended.result, ...totals }
    : { status: 'failed', agentId: ended.agentId, reason: ended.reason, error: ended.error, ...totals };
}

/**
 * `ending`, the end given to an agent its loop did not end, as its journal `events` have it: the
 * outcome the journal recorded when it already ends (its runner wrote it first: that one wins),
 * else `ending` with what the journal says the agent spent (usage, cost, rounds and steps, as its
 * loop's own end would carry). An empty journal (the agent never ran) leaves `ending` as it is.
 */
export function journalledOutcome(events: readonly AuditEvent[], ending: AgentOutcome): AgentOutcome {
  if (events.length === 0) return ending;
  const ended = events.find(isTerminal);
  if (ended !== undefined) return recordedOutcome(ended);
  const spent = resumeState(events);
  return {
    ...ending,
    usage: spent.totals.usage,
    costUsd: knownCost(spent.totals),
    rounds: spent.roundsUsed,
    steps: spent.stepsUsed,
  };
}
