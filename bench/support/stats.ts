/** Small statistics over samples. */

/** The q-quantile (0..1) by linear interpolation between closest ranks; NaN for no samples. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const position = (sorted.length - 1) * q;
  const lower = Math.floor(position);
  const upper = Math.ceil(position);
  const low = sorted[lower] ?? Number.NaN;
  const high = sorted[upper] ?? low;
  return low + (high - low) * (position - lower);
}

export function median(samples: readonly number[]): number {
  return quantile(samples, 0.5);
}

export function mean(samples: readonly number[]): number {
  return samples.length === 0 ? Number.NaN : samples.reduce((sum, x) => sum + x, 0) / samples.length;
}

/** Milliseconds since `start` (a `performance.now()` reading). */
export function since(start: number): number {
  return performance.now() - start;
}
