/**
 * What each model request cost, as the journal records it: the provider's receipt for that one
 * request, with usage estimated when the server reported none (never a silent 0), and priced at
 * the model's price (unknown price = unknown cost, never $0).
 */
import { costOf } from '../providers/pricing.ts';
import type { Receipt, Usage } from '../providers/types.ts';
import type { RunContext } from './context.ts';

/** What a request produced, for estimating its output when the server reported no usage. */
export interface RequestOutput {
  readonly text: string;
  readonly reasoning: string;
  /** Raw argument text of its tool calls. */
  readonly toolArguments: readonly string[];
}

/**
 * The receipt to journal for one request. When the server reported no usage but answered (2xx),
 * input tokens are counted from the exact input of the request (system prompt, tool schemas and
 * the projection as it stands, continuation included) and output tokens from what it streamed,
 * with the agent's BPE counter, and `usage.estimated` is set. A request that failed before any
 * answer used nothing. Cost: the provider's when it priced the request, else the model's price,
 * else unknown (`costUsd` undefined).
 */
export function requestReceipt(run: RunContext, receipt: Receipt, output: RequestOutput): Receipt {
  const unreported = (receipt.requestsWithoutUsage ?? 0) > 0;
  const answered =
    receipt.httpStatus === undefined || (receipt.httpStatus >= 200 && receipt.httpStatus < 300);
  if (!unreported) {
    return { ...receipt, costUsd: receipt.costUsd ?? priced(run, receipt.usage) };
  }
  if (!answered) return { ...receipt, costUsd: priced(run, receipt.usage) };
  const counter = run.usageCounter;
  const reasoningTokens = output.reasoning === '' ? 0 : counter.count(output.reasoning);
  let outputTokens = reasoningTokens + (output.text === '' ? 0 : counter.count(output.text));
  for (const args of output.toolArguments) outputTokens += counter.count(args);
  const usage: Usage = {
    inputTokens: run.fixedUsageTokens + inputTokens(run),
    outputTokens,
    cachedInputTokens: 0,
    reasoningTokens,
    estimated: true,
  };
  return { ...receipt, usage, costUsd: priced(run, usage) };
}

/** Tokens of the projection as it stands, with the counter usage is estimated with. */
function inputTokens(run: RunContext): number {
  // The projection keeps its own count incrementally; only a different counter must re-count.
  return run.usageCounter === run.projection.counter
    ? run.projection.renderTokens()
    : run.usageCounter.count(run.projection.render());
}

function priced(run: RunContext, usage: Usage): number | undefined {
  return run.price === undefined ? undefined : costOf(usage, run.price);
}
