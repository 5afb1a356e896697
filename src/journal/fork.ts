/**
 * Forking a journal: a new agent that continues a failed one. The new journal holds the failed
 * agent's events up to its end (its Completed or Failed event and anything after it left out),
 * with the new agent's id, each at its original time, chained afresh; the agent then resumes from
 * it, so finished tool calls are answered from the record and never run again. The failed agent's
 * own journal is not touched: each journal still ends in exactly one terminal event.
 *
 * The fork's receipts are counted in the new agent's outcome (it carries its whole history) and
 * were in the failed agent's: {@link forkedTotals} is what the new agent inherited, which run
 * totals must not add twice (`AgentOutcome.inherited`).
 */
import { MAX_FORKED_FROM_IDS } from './constants.ts';
import type { AuditEvent, AuditEventInput } from './events.ts';
import type { JournalSink } from './sink.ts';
import { addReceipt, type UsageTotals, ZERO_USAGE_TOTALS } from './usage.ts';

/** How many of `events` (a journal's, from its start) a fork carries: those before its end. */
export function forkedLength(events: readonly AuditEvent[]): number {
  const end = events.findIndex((event) => event.type === 'Completed' || event.type === 'Failed');
  return end < 0 ? events.length : end;
}

/**
 * Whether a journal whose first event is `first` is a fork of one whose first event is `from`: a
 * fork keeps each copied event's time, so its first event is the earlier journal's own.
 */
export function startsAsForkOf(
  first: Pick<AuditEvent, 'ts' | 'type'> | undefined,
  from: Pick<AuditEvent, 'ts' | 'type'> | undefined,
): boolean {
  return first !== undefined && from !== undefined && first.ts === from.ts && first.type === from.type;
}

/**
 * The events of `events` to carry into a fork, as inputs of agent `agentId` (with their `ts`).
 * With `from` (the id of the agent whose journal `events` is), the copied `Started` records it
 * first in its `forkedFrom`, before the attempts that journal was itself forked from: every earlier
 * attempt's id stays known to the last retry, whatever supervisor ran the ones between, up to the
 * newest `maxForkedFrom` of them (older ones are dropped: their children are not searched for).
 */
export function forkedInputs(
  events: readonly AuditEvent[],
  agentId: string,
  from?: string,
  maxForkedFrom = MAX_FORKED_FROM_IDS,
): AuditEventInput[] {
  const kept = events.slice(0, forkedLength(events));
  return kept.map((event) => {
    const { seq: _seq, prev: _prev, hash: _hash, ...body } = event;
    if (body.type !== 'Started' || from === undefined) return { ...body, agentId } as AuditEventInput;
    const earlier = (body.forkedFrom ?? []).filter((id) => id !== from);
    const forkedFrom = [from, ...earlier].slice(0, Math.max(1, maxForkedFrom));
    return { ...body, agentId, forkedFrom } as AuditEventInput;
  });
}

/**
 * The attempts a journal whose first event is `first` was forked from, newest first (see
 * {@link forkedInputs}): at most the newest `maxForkedFrom`, however many a journal holds.
 */
export function forkOrigins(
  first: AuditEvent | undefined,
  maxForkedFrom = MAX_FORKED_FROM_IDS,
): readonly string[] {
  return first?.type === 'Started' ? (first.forkedFrom ?? []).slice(0, maxForkedFrom) : [];
}

/** Appends `inputs` to `sink`; each keeps its `ts`. */
export function writeFork(sink: JournalSink, inputs: readonly AuditEventInput[]): void {
  for (const input of inputs) sink.append(input);
}

/** What the receipts among `inputs` (a fork's events) add up to: what the agent continuing them inherits. */
export function forkedTotals(inputs: readonly AuditEventInput[]): UsageTotals {
  let totals = ZERO_USAGE_TOTALS;
  for (const input of inputs)
    if (input.type === 'ProviderReceipt') totals = addReceipt(totals, input.receipt);
  return totals;
}
