/** Defaults of the projection and its token budget. Shared markers live in ../constants.ts. */

/** Sections of a render are joined by exactly one blank line. */
export const SECTION_SEPARATOR = '\n\n';

/** The heuristic counter's characters (Unicode code points) per token. */
export const HEURISTIC_CHARS_PER_TOKEN = 4;

/**
 * Shown to the model instead of a tool result that would not fit the input budget. The exact result
 * still goes to the audit journal; only the model is spared it.
 */
export const RESULT_NOT_FITTED_TEXT =
  '[The tool ran, but its result was too large to fit in the context, so it is not shown. Do not retry this call.]';

/** Default calibrator settings. */
export const DEFAULT_CALIBRATION = {
  /** Weight of the newest receipt in the moving average of actual / estimated tokens. */
  smoothing: 0.3,
  /** Estimates are never lowered below the raw count times this. */
  safetyFloor: 1,
  /** Ratios outside [minRatio, maxRatio] are clamped: one odd receipt must not wreck the budget. */
  minRatio: 0.25,
  maxRatio: 4,
} as const;

/** Version of the plain-JSON projection snapshot. */
export const PROJECTION_SNAPSHOT_VERSION = 1;

/** How many recently measured texts a BPE ledger remembers (a fit check is followed by the real add). */
export const MEASURE_CACHE_SIZE = 8;

/**
 * Code points of one character class (letters, punctuation, whitespace) a BPE piece may hold before
 * the counter cuts it: the merge is quadratic in a piece's length. Real text stays far below it.
 */
export const MAX_EXACT_PIECE = 512;
