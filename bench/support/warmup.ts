/**
 * The benchmarks' steady-state warm-up, one rule for every side they compare: untimed full-size
 * runs until the side stops getting faster. Every isolate compiles its hot code for itself, so a
 * side spread over more isolates (a Supervisor's main thread and hosts, redis workers) takes more
 * runs to stop compiling than the in-process loop; a fixed count of warm-up runs either measured
 * part of that compilation or wasted time on the side that was already warm (bench/RESULTS.md,
 * lead session 4).
 *
 * One run that happens to be slow (the machine's, not the side's) does not end the warm-up: a side
 * is warm only after {@link STEADY_PATIENCE} runs in a row that are not faster than its fastest run
 * before them. With a single such run, a Supervisor whose V8 helper threads were still compiling
 * (their CPU time falling from ~250 to ~70 ms a run over the next three runs) was timed from one
 * noisy bump, and its timed runs were then 15-40 % slower than after a full warm-up
 * (bench/RESULTS.md, lead session 9).
 */

/** A run counts as faster when its CPU time is more than this fraction below the fastest before it. */
export const STEADY_TOLERANCE = 0.05;

/** A side is warm after this many runs in a row that were not faster (by {@link STEADY_TOLERANCE}). */
export const STEADY_PATIENCE = 2;

/** How many untimed full-size runs a side gets. */
export interface WarmupRuns {
  readonly min: number;
  readonly max: number;
}

/**
 * Runs `run` at least `min` and at most `max` times, stopping once {@link STEADY_PATIENCE} runs in
 * a row had a CPU time no more than {@link STEADY_TOLERANCE} below the fastest run before each of
 * them (CPU time, not wall time: other load on the machine moves it far less). The first run is
 * never counted as steady: nothing came before it. Returns every run, in order.
 */
export async function warmUntilSteady<T extends { readonly cpuMs: number }>(
  run: () => Promise<T>,
  { min, max }: WarmupRuns,
): Promise<T[]> {
  const runs: T[] = [];
  let fastest = Number.POSITIVE_INFINITY;
  let steadyRuns = 0;
  while (runs.length < max) {
    const sample = await run();
    runs.push(sample);
    if (runs.length > 1 && sample.cpuMs >= fastest * (1 - STEADY_TOLERANCE)) steadyRuns += 1;
    else steadyRuns = 0;
    fastest = Math.min(fastest, sample.cpuMs);
    if (runs.length >= min && steadyRuns >= STEADY_PATIENCE) break;
  }
  return runs;
}
