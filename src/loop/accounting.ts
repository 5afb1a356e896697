/**
 * What each model request cost, as the journal records it: the provider's receipt for that one
 * request, with usage estimated when the server reported none (never a silent 0), and priced at
 * the model's price (unknown price = unknown cost, never $0).
 */

import type { SerializedError } from '../errors.ts';
import { extend } from '../objects.ts';
import { findCutRange, isSafeCut } from '../projection/safe-cuts.ts';
import { BpeCounter, type TokenCounter } from '../projection/token-counter.ts';
import { asCount } from '../providers/json-shapes.ts';
import { costOf } from '../providers/pricing.ts';
import { BAD_PORT_ERRNO } from '../providers/provider-error.ts';
import { addUsage, ZERO_USAGE } from '../providers/receipt.ts';
import { attemptsOf, type RetriedAttempts } from '../providers/request-attempts.ts';
import type { Receipt, Usage, UsageSide } from '../providers/types.ts';
import type { RunContext } from './context.ts';

/** What a request produced, for estimating its output when the server reported no usage. */
export interface RequestOutput {
  readonly text: string;
  readonly reasoning: string;
  /** Raw argument text of its tool calls. */
  readonly toolArguments: readonly string[];
  /**
   * Output streamed and never seen as text (a failed request's tool-call arguments in progress):
   * estimated at ESTIMATED_CHARS_PER_TOKEN.
   */
  readonly unseenChars?: number;
  /** The request never reached the server (its connection could not be made): no usage. */
  readonly unsent?: boolean;
}

/**
 * The receipt to journal for one request. When the server reported no usage but answered (2xx),
 * input tokens are counted from the exact input of the request (system prompt, tool schemas and
 * the projection as it stands, continuation included) and output tokens from what it streamed,
 * with the agent's BPE counter (in pieces of 8,192 characters, extrapolated beyond 262,144), and
 * `usage.estimated` is set. When it reported one side readably and not the other (the provider
 * marks the side it filled in with `usage.estimatedSide`; a provider module's unreadable count is
 * found here), only that side is counted so, the reported side is kept, and `estimatedSide` says
 * which was estimated; output the provider marked estimated is counted at least what the server
 * had counted when the response broke off. A request that failed before any answer used nothing.
 * Cost: the provider's when it priced the request, else the model's price, else unknown
 * (`costUsd` undefined).
 *
 * A request retried after its server had an attempt (a stream that broke off) is charged for each
 * such attempt too (request-attempts.ts): as it reported, or estimated like a request without
 * usage (input from the request's exact input, output at ESTIMATED_CHARS_PER_TOKEN of what it
 * streamed); only the last attempt is counted from the text the loop saw.
 */
export function requestReceipt(run: RunContext, receipt: Receipt, output: RequestOutput): Receipt {
  const attempts = attemptsOf(receipt);
  const floor = attempts?.lastReportedOutput;
  if (attempts?.retried === undefined) return attemptReceipt(run, receipt, output, floor);
  const lastOnly = extend(receipt, {
    usage: attempts.last ?? ZERO_USAGE,
    requestsWithoutUsage: attempts.last === undefined ? 1 : 0,
    httpStatus: attempts.lastHttpStatus,
    costUsd: undefined,
  });
  const last = attemptReceipt(
    run,
    lastOnly,
    attempts.lastUnsent ? extend(output, { unsent: true }) : output,
    floor,
  );
  const retried = retriedUsage(run, attempts.retried);
  const retriedCost = priced(run, retried);
  return extend(receipt, {
    usage: addUsage(retried, last.usage),
    costUsd: last.costUsd === undefined || retriedCost === undefined ? undefined : last.costUsd + retriedCost,
  });
}

/** What a request's retried attempts used: as reported, each that reported nothing estimated. */
function retriedUsage(run: RunContext, retried: RetriedAttempts): Usage {
  if (retried.withoutUsage === 0) return retried.usage ?? ZERO_USAGE;
  const estimated: Usage = {
    inputTokens: retried.withoutUsage * (run.fixedUsageTokens + inputTokens(run)),
    outputTokens: Math.ceil(retried.withoutUsageChars / ESTIMATED_CHARS_PER_TOKEN),
    cachedInputTokens: 0,
    reasoningTokens: 0,
    estimated: true,
  };
  return retried.usage === undefined ? estimated : addUsage(retried.usage, estimated);
}

/** {@link requestReceipt} of one attempt; `floor`: what its server had counted of its output. */
function attemptReceipt(
  run: RunContext,
  receipt: Receipt,
  output: RequestOutput,
  floor: number | undefined,
): Receipt {
  // A provider module's counts are checked like a server's (see asCount): a negative or endless
  // one would take the agent's and the run's spend below their budgets, or make it Infinity.
  const reported = (receipt.requestsWithoutUsage ?? 0) === 0;
  const { usage } = receipt;
  const inputRead = reported && asCount(usage.inputTokens) !== undefined && !isEstimated(usage, 'input');
  const outputRead = reported && asCount(usage.outputTokens) !== undefined && !isEstimated(usage, 'output');
  const answered =
    output.unsent !== true &&
    (receipt.httpStatus === undefined || (receipt.httpStatus >= 200 && receipt.httpStatus < 300));
  if (reported && plausibleUsage(usage) && (usage.estimated !== true || usage.estimatedSide === undefined)) {
    const cost = receipt.costUsd;
    return extend(receipt, {
      costUsd: cost !== undefined && Number.isFinite(cost) && cost >= 0 ? cost : priced(run, usage),
    });
  }
  if (!answered) {
    const kept = plausibleUsage(usage) ? usage : ZERO_USAGE;
    return extend(receipt, { usage: kept, costUsd: priced(run, kept) });
  }
  const estimatedInput = inputRead ? usage.inputTokens : run.fixedUsageTokens + inputTokens(run);
  let estimatedOutput = usage.outputTokens;
  let reasoningTokens = Math.min(asCount(usage.reasoningTokens) ?? 0, estimatedOutput);
  if (!outputRead) {
    const counter = run.usageCounter;
    reasoningTokens = boundedCount(counter, output.reasoning);
    estimatedOutput = reasoningTokens + boundedCount(counter, output.text);
    for (const args of output.toolArguments) estimatedOutput += boundedCount(counter, args);
    if (output.unseenChars !== undefined && output.unseenChars > 0) {
      estimatedOutput += Math.ceil(output.unseenChars / ESTIMATED_CHARS_PER_TOKEN);
    }
    // A response that broke off after its server counted some output (a running total, then more
    // text, then nothing): at least that count, whatever the text seen counts to.
    if (isEstimated(usage, 'output') && floor !== undefined)
      estimatedOutput = Math.max(estimatedOutput, floor);
  }
  const side = inputRead ? 'output' : outputRead ? 'input' : undefined;
  const estimated: Usage = {
    inputTokens: estimatedInput,
    outputTokens: estimatedOutput,
    // A count the server gave for cache reads stays, bounded by the input it is part of.
    cachedInputTokens: inputRead ? Math.min(asCount(usage.cachedInputTokens) ?? 0, estimatedInput) : 0,
    reasoningTokens,
    estimated: true,
    ...(side === undefined ? {} : { estimatedSide: side }),
  };
  return extend(receipt, { usage: estimated, costUsd: priced(run, estimated) });
}

/** Whether `side` of `usage` was filled in by the provider's estimate (redone here). */
function isEstimated(usage: Usage, side: UsageSide): boolean {
  return usage.estimated === true && usage.estimatedSide === side;
}

/** Characters per token assumed for output whose text troupe never saw. */
const ESTIMATED_CHARS_PER_TOKEN = 4;

/** Every count one a server could mean ({@link asCount}, the check server usage passes). */
function plausibleUsage(usage: Usage): boolean {
  return (
    asCount(usage.inputTokens) !== undefined &&
    asCount(usage.outputTokens) !== undefined &&
    asCount(usage.cachedInputTokens) !== undefined &&
    asCount(usage.reasoningTokens) !== undefined
  );
}

/** Tokens of the projection as it stands, with the counter usage is estimated with. */
function inputTokens(run: RunContext): number {
  // The projection keeps its own count incrementally; only a different counter must re-count.
  if (run.usageCounter === run.projection.counter) return run.projection.renderTokens();
  let memo = renderCounts.get(run);
  if (memo === undefined) {
    memo = new PieceCounts();
    renderCounts.set(run, memo);
  }
  return memo.count(run.usageCounter, run.projection.render());
}

/**
 * The last render of each agent whose usage is estimated, with the count of each of its pieces. A
 * round's requests each count the projection as it stands; it grows at its end, so without this
 * every request re-counted every earlier entry of the round (quadratic in the round's length: in
 * the routing benchmark, an agent's 200 waits in one round, it was ~30% of its thread's CPU).
 */
const renderCounts = new WeakMap<RunContext, PieceCounts>();

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
  return countPieces(text, (piece) => counter.count(piece));
}

/** Sums `count` over the pieces of `text` boundedCount counts, and extrapolates as it does. */
function countPieces(text: string, count: (piece: string, index: number) => number): number {
  if (text === '') return 0;
  const counted = Math.min(text.length, ESTIMATE_COUNTED_CHARS);
  let tokens = 0;
  for (let start = 0, index = 0; start < counted; start += ESTIMATE_CHUNK_CHARS, index += 1) {
    tokens += count(text.slice(start, Math.min(counted, start + ESTIMATE_CHUNK_CHARS)), index);
  }
  return counted === text.length ? tokens : Math.ceil((tokens * text.length) / counted);
}

/** One piece of the previous text, its count, and its last safe cut (see below). */
interface CountedPiece {
  readonly text: string;
  readonly tokens: number;
  /** The piece's last safe cut (safe-cuts.ts), or -1: a BPE count splits exactly there. */
  readonly cut: number;
  /** Tokens before `cut`. */
  readonly before: number;
}

/**
 * {@link boundedCount} of successive texts, re-counting only what changed since the previous
 * text. A piece equal to the piece at the same place of the previous text has its count (pieces
 * are cut at fixed offsets, so a text that grew at its end changes its last piece only). With a
 * BPE counter, a changed piece that still starts with the previous one up to that one's last safe
 * cut is counted as the tokens before the cut (known) plus a count of the rest: what a growing
 * render appended. Gives exactly boundedCount's result. Keeps the previous text's pieces, their
 * counts and their last cuts.
 */
export class PieceCounts {
  #pieces: readonly CountedPiece[] = [];
  #counter: TokenCounter | undefined;

  count(counter: TokenCounter, text: string): number {
    const known = counter === this.#counter ? this.#pieces : [];
    const bpe = counter instanceof BpeCounter;
    const pieces: CountedPiece[] = [];
    const tokens = countPieces(text, (piece, index) => {
      const previous = known[index];
      const counted =
        previous?.text === piece
          ? previous
          : bpe
            ? countAtCuts(counter, piece, previous)
            : { text: piece, tokens: counter.count(piece), cut: -1, before: 0 };
      pieces.push(counted);
      return counted.tokens;
    });
    this.#pieces = pieces;
    this.#counter = counter;
    return tokens;
  }
}

/**
 * Counts `piece` split at its last safe cut (exact for a BPE counter), reusing the count of
 * `previous` up to its last cut when `piece` starts the same way and the cut is still safe.
 */
function countAtCuts(counter: TokenCounter, piece: string, previous: CountedPiece | undefined): CountedPiece {
  let from = 0;
  let before = 0;
  if (
    previous !== undefined &&
    previous.cut > 0 &&
    piece.length > previous.cut &&
    isSafeCut(piece, previous.cut) &&
    // Equality of two slices, not startsWith: V8 compares equal-length flat strings with a memory
    // compare, and startsWith char by char (~1 ns a character: ~8 µs for a full piece, per request).
    piece.slice(0, previous.cut) === previous.text.slice(0, previous.cut)
  ) {
    from = previous.cut;
    before = previous.before;
  }
  const rest = from === 0 ? piece : piece.slice(from);
  const range = findCutRange(rest);
  if (range === undefined) {
    const tokens = before + counter.count(rest);
    return { text: piece, tokens, cut: from > 0 ? from : -1, before };
  }
  const head = counter.count(rest.slice(0, range.last));
  const tail = counter.count(rest.slice(range.last));
  return { text: piece, tokens: before + head + tail, cut: from + range.last, before: before + head };
}

function priced(run: RunContext, usage: Usage): number | undefined {
  return run.price === undefined ? undefined : costOf(usage, run.price);
}

/** System errors of a connection that was never made: the request did not reach the server. */
const UNSENT_ERRNOS: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  BAD_PORT_ERRNO,
]);

/** Whether a request's error says its connection was never made (refused, unknown host). */
export function neverSent(error: SerializedError): boolean {
  const { network, errno } = error.fields;
  return network === true && typeof errno === 'string' && UNSENT_ERRNOS.has(errno);
}
