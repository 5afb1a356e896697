/**
 * How a model request's receipt splits over its attempts, for the loop's accounting. A request
 * retried after its server had an attempt (a 200 whose stream broke off) is charged for every
 * such attempt once; the loop estimates what their servers did not report, and only the last
 * attempt's output is counted from the text it saw. Not public API: `createTurn` attaches it to
 * the request receipts it builds, and the loop looks it up by the receipt.
 */
import type { Receipt, Usage } from './types.ts';

/** The attempts of a request that failed after their server answered (2xx) and were retried. */
export interface RetriedAttempts {
  /** The usage they reported, summed (a stream that broke off has its output estimated). */
  readonly usage: Usage | undefined;
  /** Of them, those that reported no usage: each is estimated like a request without usage. */
  readonly withoutUsage: number;
  /** Output characters those streamed (none reached the consumer: they were retried). */
  readonly withoutUsageChars: number;
}

/** One request's attempts: its last one, and those retried before it. */
export interface RequestAttempts {
  /** The usage the last attempt reported; undefined when it reported none. */
  readonly last: Usage | undefined;
  /**
   * With `last`'s output estimated (a stream that broke off after its server counted some): the
   * output tokens the server had counted, the least the loop's own count may charge.
   */
  readonly lastReportedOutput: number | undefined;
  /** The status of the last attempt's HTTP answer; undefined when it got none. */
  readonly lastHttpStatus: number | undefined;
  /** The last attempt never left (its admission was refused or cancelled). */
  readonly lastUnsent: boolean;
  /** Undefined when no attempt was retried after its server answered. */
  readonly retried: RetriedAttempts | undefined;
}

const attempts = new WeakMap<Receipt, RequestAttempts>();

/** Notes how `receipt` (a request's) splits over its attempts. */
export function noteAttempts(receipt: Receipt, split: RequestAttempts): Receipt {
  attempts.set(receipt, split);
  return receipt;
}

/** How `receipt` splits over its attempts, when `createTurn` built it. */
export function attemptsOf(receipt: Receipt): RequestAttempts | undefined {
  return attempts.get(receipt);
}

/**
 * The output tokens a server had counted of usage whose output is estimated (see
 * `failedAttemptUsage`), by the usage object.
 */
const reportedOutputs = new WeakMap<Usage, number>();

/** Notes that the server had counted `tokens` of `usage`'s estimated output. */
export function noteReportedOutput(usage: Usage, tokens: number): Usage {
  reportedOutputs.set(usage, tokens);
  return usage;
}

/** What the server had counted of `usage`'s output, when its output is estimated. */
export function reportedOutputOf(usage: Usage): number | undefined {
  return reportedOutputs.get(usage);
}
