/** Defaults and bounds of scoring, in one place. */

/** A judge score at or above this passes when the judge does not say `pass` itself. */
export const DEFAULT_JUDGE_THRESHOLD = 0.5;

/** Rounds a judge agent may take when its scorer does not say. */
export const DEFAULT_JUDGE_MAX_STEPS = 8;

/** Wall-clock budget of one judge agent (it ends Failed(timeout) after it). 5 minutes. */
export const DEFAULT_JUDGE_WALL_CLOCK_MS = 300_000;

/**
 * Characters of the agent's output, the expected value and the task shown to a judge; longer
 * text is cut and the judge is told so. Keeps one huge answer from blowing the judge's budget.
 */
export const JUDGE_TEXT_MAX_CHARS = 20_000;

/** Judge agents running at once when the caller does not say. */
export const DEFAULT_JUDGE_CONCURRENCY = 8;

/**
 * Calls of one scorer function running at once when the caller does not say (a fan-out says its
 * `concurrency`). Items can finish faster than a slow function scores them, and `troupe score`
 * scores every entry at once: unbounded, 20,000 entries were 20,000 calls in flight.
 */
export const DEFAULT_SCORER_FUNCTION_CONCURRENCY = 8;

/**
 * Calls of a scorer function in a row that got no answer in time, after which it is not called
 * again in this session: its items get an error at once instead of each waiting out the timeout.
 */
export const SCORER_FUNCTION_MAX_TIMEOUTS_IN_A_ROW = 5;

/** Time a scorer function from a module gets per item before it counts as an error. 60 s. */
export const SCORER_FUNCTION_TIMEOUT_MS = 60_000;

/** Longest regular expression accepted from a plan or a data set (characters). */
export const MAX_PATTERN_CHARS = 2_000;

/** Longest JSONPath expression accepted (characters). */
export const MAX_JSON_PATH_CHARS = 1_000;

/** Characters of a score's `detail` kept (what differed, what the judge said). */
export const SCORE_DETAIL_MAX_CHARS = 300;
