/**
 * What an ended agent spent that its receipts never told the supervisor. A thread (or a redis
 * worker) writes a request's receipt to the journal before it signals it, and signals once per
 * event-loop turn: when it dies in between, the receipt is journalled, and in the agent's outcome
 * (which the engine builds from the journal), but its signal never came. `runLimits` and the
 * usage sink, fed from the signals, would stay short of the outcome; at the agent's end they are
 * given the difference.
 */
import { COST_ROUNDING_USD } from '../constants.ts';
import type { InheritedSpend } from '../loop/types.ts';
import type { Usage } from '../providers/types.ts';

/** What an agent's receipts that reached the supervisor add up to. */
export interface ReportedSpend {
  usage: Usage;
  costUsd: number;
}

/**
 * What `own` (the agent's own spend: its outcome less what a retry inherited) holds beyond the
 * receipts `reported`, or undefined when nothing (the usual case). The cost is null when `own`'s
 * is unknown; the usage keeps `own`'s estimated marks.
 */
export function unreportedSpend(own: InheritedSpend, reported: ReportedSpend): InheritedSpend | undefined {
  const less = (a: number, b: number): number => Math.max(0, a - b);
  const total = own.usage;
  const usage: Usage = {
    inputTokens: less(total.inputTokens, reported.usage.inputTokens),
    outputTokens: less(total.outputTokens, reported.usage.outputTokens),
    cachedInputTokens: less(total.cachedInputTokens, reported.usage.cachedInputTokens),
    reasoningTokens: less(total.reasoningTokens, reported.usage.reasoningTokens),
    ...(total.estimated === true ? { estimated: true } : {}),
    ...(total.estimated === true && total.estimatedSide !== undefined
      ? { estimatedSide: total.estimatedSide }
      : {}),
  };
  const cost = own.costUsd === null ? null : less(own.costUsd, reported.costUsd);
  const costMissing = cost !== null && cost > COST_ROUNDING_USD;
  if (usage.inputTokens + usage.outputTokens === 0 && !costMissing) return undefined;
  return { usage, costUsd: cost === null ? null : costMissing ? cost : 0 };
}
