/**
 * What each model request cost, as the journal records it: the provider's receipt for that one
 * request, with usage estimated when the server reported none (never a silent 0), and priced at
 * the model's price (unknown price = unknown cost, never $0).
 */

import type { TokenCounter } from '../projection/token-counter.ts';
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
 * with the agent's BPE counter (in pieces of 8,192 characters, extrapolated beyond 262,144), and
 * `usage.estimated` is set. A request that failed before any
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
  const reasoningTokens = boundedCount(counter, output.reasoning);
  let outputTokens = reasoningTokens + boundedCount(counter, output.text);
  for (const args of output.toolArguments) outputTokens += boundedCount(counter, args);
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
    : boundedCount(run.usageCounter, run.projection.render());
}

/**
 * Characters of one text counted with the tokenizer; beyond them the count is extrapolated at
 * the counted part's rate. Output can be millions of characters (a server streaming without end),
 * and counting it all would block the agent's thread for nothing: it is an estimate anyway.
 */
export const ESTIMATE_COUNTED_CHARS = 262_144;
/** Pieces the counted part is cut into, so no single count is large. */
const ESTIMATE_CHUNK_CHARS = 8192;

/** `counter`'s count of `text`, in bounded pieces, extrapolated past {@link ESTIMATE_COUNTED_CHARS}. */
export function boundedCount(counter: TokenCounter, text: string): number {
  if (text === '') return 0;
  const counted = Math.min(text.length, ESTIMATE_COUNTED_CHARS);
  let tokens = 0;
  for (let start = 0; start < counted; start += ESTIMATE_CHUNK_CHARS) {
    tokens += counter.count(text.slice(start, Math.min(counted, start + ESTIMATE_CHUNK_CHARS)));
  }
  return counted === text.length ? tokens : Math.ceil((tokens * text.length) / counted);
}

function priced(run: RunContext, usage: Usage): number | undefined {
  return run.price === undefined ? undefined : costOf(usage, run.price);
}
