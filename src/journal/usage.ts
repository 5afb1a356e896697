/** Rolling provider receipts up into the totals that Completed, Failed and resume report. */
import { addUsage } from '../providers/receipt.ts';
import type { Receipt, Usage } from '../providers/types.ts';

/** Everything an agent's model requests cost so far. */
export interface UsageTotals {
  /** Summed usage; `estimated` when some counts were estimated because a server reported none. */
  readonly usage: Usage;
  /** USD of the requests whose price is known. */
  readonly costUsd: number;
  /** Requests whose cost is unknown (no price for the model): the total cost is then unknown. */
  readonly unpricedRequests: number;
  /** Model requests (steps), retries not counted. */
  readonly requests: number;
  readonly retries: number;
  readonly latencyMs: number;
}

/** Totals before any request. */
export const ZERO_USAGE_TOTALS: UsageTotals = {
  usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
  costUsd: 0,
  unpricedRequests: 0,
  requests: 0,
  retries: 0,
  latencyMs: 0,
};

/** `totals` plus one receipt. */
export function addReceipt(totals: UsageTotals, receipt: Receipt): UsageTotals {
  return {
    usage: addUsage(totals.usage, receipt.usage),
    costUsd: totals.costUsd + (receipt.costUsd ?? 0),
    unpricedRequests: totals.unpricedRequests + (receipt.costUsd === undefined ? receipt.requests : 0),
    requests: totals.requests + receipt.requests,
    retries: totals.retries + receipt.retries,
    latencyMs: totals.latencyMs + receipt.latencyMs,
  };
}

/** The totals of a list of receipts. */
export function sumReceipts(receipts: Iterable<Receipt>): UsageTotals {
  let totals = ZERO_USAGE_TOTALS;
  for (const receipt of receipts) totals = addReceipt(totals, receipt);
  return totals;
}

/** The cost to report for `totals`: null when any request's price is unknown. */
export function knownCost(totals: UsageTotals): number | null {
  return totals.unpricedRequests > 0 ? null : totals.costUsd;
}
