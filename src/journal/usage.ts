/** Rolling provider receipts up into the totals that Completed, Failed and resume report. */
import type { Receipt, Usage } from '../providers/types.ts';

/** Everything an agent's provider turns cost so far. */
export interface UsageTotals {
  readonly usage: Usage;
  /** USD; turns whose price is unknown count 0. */
  readonly costUsd: number;
  /** HTTP requests, retries included. */
  readonly requests: number;
  readonly retries: number;
  readonly latencyMs: number;
}

/** Totals before any turn. */
export const ZERO_USAGE_TOTALS: UsageTotals = {
  usage: { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
  costUsd: 0,
  requests: 0,
  retries: 0,
  latencyMs: 0,
};

/** `totals` plus one receipt. */
export function addReceipt(totals: UsageTotals, receipt: Receipt): UsageTotals {
  return {
    usage: {
      inputTokens: totals.usage.inputTokens + receipt.usage.inputTokens,
      outputTokens: totals.usage.outputTokens + receipt.usage.outputTokens,
      cachedInputTokens: totals.usage.cachedInputTokens + receipt.usage.cachedInputTokens,
      reasoningTokens: totals.usage.reasoningTokens + receipt.usage.reasoningTokens,
    },
    costUsd: totals.costUsd + (receipt.costUsd ?? 0),
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
