/**
 * The benchmarks' steady-state warm-up, one rule for every side they compare: untimed full-size
 * runs until the side stops getting faster. Every isolate compiles its hot code for itself, so a
 * side spread over more isolates (a Supervisor's main thread and hosts, redis workers) takes more
 * runs to stop compiling than the in-process loop; a fixed count of warm-up runs either measured
 * part of that compilation or wasted time on the side that was already warm (bench/RESULTS.md,
 * lead session 4).
 */

/** A side is warm once a run's CPU time is no more than this fraction below the previous run's. */
export const STEADY_TOLERANCE = 0.05;

/** How many untimed full-size runs a side gets. */
export interface WarmupRuns {
  readonly min: number;
  readonly max: number;
}

/**
 * Runs `run` at least `min` and at most `max` times, stopping after the first run whose CPU time
 * is no more than {@link STEADY_TOLERANCE} below the run before it (CPU time, not wall time:
 * other load on the machine moves it far less). Returns every run, in order.
 */
export async function warmUntilSteady<T extends { readonly cpuMs: number }>(
  run: () => Promise<T>,
  { min, max }: WarmupRuns,
): Promise<T[]> {
  const runs: T[] = [];
  while (runs.length < max) {
    const sample = await run();
    const previous = runs.at(-1);
    runs.push(sample);
    if (
      runs.length >= min &&
      previous !== undefined &&
      sample.cpuMs >= previous.cpuMs * (1 - STEADY_TOLERANCE)
    ) {
      break;
    }
  }
  return runs;
}
