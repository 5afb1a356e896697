/**
 * Projection budget benchmark: the incremental ledger against naive re-render-and-count.
 *
 * Workload: context + task, 200 state keys, N history entries (500 / 2,000 / 8,000), then timed tool
 * rounds with random outcomes: reads that display a key, edits that update (and sometimes display)
 * one, removals, plain results and failed results. One round, for each side:
 *   incremental: addToolResult(result, { maxInputTokens })  (fit check by trial, then add)
 *                + fits(maxInputTokens) before the next model round
 *   naive:       apply the result, then render() and count it once (the pre-round check reuses that
 *                count, which is generous to the naive side)
 * The provider's own render, once per model round, is the same for both and not measured.
 *
 * Run: node --import tsx bench/projection.ts [--quick]
 */
import { pathToFileURL } from 'node:url';
import { PROTOCOL_TOKEN_RESERVE, REMOVED_MARKER, SUPERSEDED_MARKER } from '../src/constants.ts';
import { Projection } from '../src/projection/projection.ts';
import { heuristicCounter, o200kCounter, type TokenCounter } from '../src/projection/token-counter.ts';
import type { ToolResultInput } from '../src/projection/types.ts';
import type { StateUpdate } from '../src/tools/types.ts';

const SIZES = [500, 2000, 8000] as const;
type Size = (typeof SIZES)[number];
type PerSize = { [K in Size]: number };

const STATE_KEYS = 200;
const RESERVE = PROTOCOL_TOKEN_RESERVE;
const NO_LIMIT = Number.MAX_SAFE_INTEGER;

/** Incremental-ledger figures for one counter. */
export interface CounterBenchResult {
  /** Naive µs per round / incremental µs per round at 2,000 entries and 200 keys. */
  readonly speedupVsNaive: number;
  /** Incremental µs per tool round (median batch). */
  readonly perOpUs: PerSize;
  /** Incremental µs per tool round in the fastest batch: the cost with the least interference. */
  readonly bestPerOpUs: PerSize;
  /** Naive µs per tool round, median batch (NaN for sizes not run). */
  readonly naivePerOpUs: PerSize;
  /** bestPerOpUs[8000] / bestPerOpUs[500]: 1 is perfectly flat. */
  readonly growth8000vs500: number;
  /** Render size in characters at 2,000 entries. */
  readonly renderChars2000: number;
  /** The incremental estimate equalled the naive count at the end of every run. */
  readonly exact: boolean;
}

export interface ProjectionBenchResult extends CounterBenchResult {
  readonly counter: 'heuristic';
  readonly quick: boolean;
  readonly o200k: CounterBenchResult;
}

/** Deterministic PRNG (mulberry32). */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VOCABULARY = (
  'the a of to and in is for on with that this file function return const let import export from ' +
  'error value test result path string number await async class interface type if else while ' +
  'src/index.ts README.md 42 1024 x.length {} () => ; , . : = == !== + - * / # ## - [ ] ` " \n \n\n    '
).split(' ');

function words(random: () => number, chars: number): string {
  const out: string[] = [];
  let length = 0;
  while (length < chars) {
    const word = VOCABULARY[Math.floor(random() * VOCABULARY.length)] ?? 'x';
    out.push(word);
    length += word.length + 1;
  }
  return out.join(' ');
}

function between(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min));
}

/** A random tool outcome, like a coding agent's. */
function toolResult(random: () => number, round: number): ToolResultInput {
  const key = `file-${Math.floor(random() * STATE_KEYS)}.ts`;
  const roll = random();
  if (roll < 0.35) {
    return {
      text: `Tool result: read ${key}\n${words(random, between(random, 300, 1500))}`,
      ok: true,
      displayedStateKeys: [key],
    };
  }
  if (roll < 0.65) {
    const body = words(random, between(random, 500, 3000));
    const shows = random() < 0.5;
    return {
      text: shows ? `Tool result: edited ${key}\n${body}` : `Tool result: edited ${key} (round ${round})`,
      ok: true,
      stateUpdates: [{ key, text: `${key}\n${body}` }],
      displayedStateKeys: shows ? [key] : [],
    };
  }
  if (roll < 0.7)
    return { text: `Tool result: deleted ${key}`, ok: true, stateUpdates: [{ key, text: null }] };
  if (roll < 0.8) {
    return {
      text: `Tool result: write failed for ${key}`,
      ok: false,
      stateUpdates: [{ key, text: 'never applied' }],
    };
  }
  return { text: `Tool result: ${words(random, between(random, 100, 800))}`, ok: true };
}

/** What a straightforward loop keeps: arrays, a map, and a full render for every question. */
class NaiveProjection {
  readonly #fixed: string[];
  readonly #history: { text: string; displays: string[] }[] = [];
  readonly #states = new Map<string, string>();
  readonly #displayCount = new Map<string, number>();

  constructor(fixed: string[]) {
    this.#fixed = fixed;
  }

  add(result: ToolResultInput): void {
    if (result.ok) for (const update of result.stateUpdates ?? []) this.#update(update);
    const displays = result.ok ? [...(result.displayedStateKeys ?? [])] : [];
    this.#history.push({ text: result.text, displays });
    for (const key of displays) this.#displayCount.set(key, (this.#displayCount.get(key) ?? 0) + 1);
  }

  #update({ key, text }: StateUpdate): void {
    for (const entry of this.#history) {
      if (!entry.displays.includes(key)) continue;
      entry.text = text === null ? REMOVED_MARKER : SUPERSEDED_MARKER;
      for (const shown of entry.displays)
        this.#displayCount.set(shown, (this.#displayCount.get(shown) ?? 1) - 1);
      entry.displays = [];
    }
    this.#states.delete(key);
    if (text !== null) this.#states.set(key, text);
  }

  render(): string {
    const sections = [...this.#fixed, ...this.#history.map((entry) => entry.text)];
    for (const [key, text] of this.#states) if ((this.#displayCount.get(key) ?? 0) === 0) sections.push(text);
    return sections.filter((section) => section !== '').join('\n\n');
  }
}

interface Run {
  readonly incremental: Timing;
  readonly naive: Timing;
  readonly renderChars: number;
  readonly exact: boolean;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

interface Timing {
  readonly median: number;
  readonly best: number;
}

/** Per-round µs over batches, after a warm-up batch. Each call of `round` gets the next index. */
function timeRounds(batches: number, roundsPerBatch: number, round: (index: number) => void): Timing {
  let index = 0;
  for (let i = 0; i < roundsPerBatch; i++) round(index++);
  const samples: number[] = [];
  for (let b = 0; b < batches; b++) {
    const start = performance.now();
    for (let i = 0; i < roundsPerBatch; i++) round(index++);
    samples.push(((performance.now() - start) * 1000) / roundsPerBatch);
  }
  return { median: median(samples), best: Math.min(...samples) };
}

function runSize(counter: TokenCounter, size: Size, withNaive: boolean, quick: boolean): Run {
  const random = seeded(size);
  const context = [words(random, 2000), words(random, 1500)];
  const task = 'Refactor the module and keep every test passing.';
  const incremental = new Projection({ context, task, counter, reserveTokens: RESERVE });
  const naive = new NaiveProjection([...context, task]);
  for (let k = 0; k < STATE_KEYS; k++) {
    const result = { text: '', ok: true, stateUpdates: [{ key: `file-${k}.ts`, text: words(random, 1200) }] };
    incremental.addToolResult(result);
    naive.add(result);
  }
  for (let i = 0; i < size; i++) {
    const result = toolResult(random, i);
    incremental.addToolResult(result);
    naive.add(result);
  }

  const bpe = counter !== heuristicCounter;
  // Medians over many small batches: this machine is shared, and a batch hit by a neighbour's burst
  // or a major GC should not decide the figure.
  const batches = quick ? 5 : 15;
  const incrementalBatch = bpe ? 10 : 100;
  const naiveBatch = bpe ? 1 : 5;
  // Generated up front so that only projection work is timed; both sides replay the same rounds.
  const rounds = Array.from({ length: (batches + 1) * incrementalBatch }, (_, i) =>
    toolResult(random, size + i),
  );
  const roundAt = (index: number): ToolResultInput => rounds[index] ?? { text: 'unused', ok: true };

  const incrementalTiming = timeRounds(batches, incrementalBatch, (index) => {
    incremental.addToolResult(roundAt(index), { maxInputTokens: NO_LIMIT });
    incremental.fits(NO_LIMIT);
  });

  let naiveTiming: Timing = { median: Number.NaN, best: Number.NaN };
  let exact = true;
  if (withNaive) {
    let replayed = 0;
    let naiveFits = true;
    naiveTiming = timeRounds(batches, naiveBatch, (index) => {
      naive.add(roundAt(index));
      replayed = index + 1;
      naiveFits &&= counter.count(naive.render()) + RESERVE <= NO_LIMIT;
    });
    while (replayed < rounds.length) naive.add(roundAt(replayed++));
    exact =
      naiveFits &&
      naive.render() === incremental.render() &&
      counter.count(naive.render()) + RESERVE === incremental.estimatedTokens();
  }
  return {
    incremental: incrementalTiming,
    naive: naiveTiming,
    renderChars: incremental.render().length,
    exact,
  };
}

function benchCounter(counter: TokenCounter, quick: boolean): CounterBenchResult {
  // Untimed warm-up: JIT and the tokenizer's merge cache, which would otherwise bill the first size.
  runSize(counter, 500, false, false);
  const runs: { [K in Size]: Run } = {
    500: runSize(counter, 500, !quick || counter === heuristicCounter, quick),
    2000: runSize(counter, 2000, true, quick),
    8000: runSize(counter, 8000, !quick || counter === heuristicCounter, quick),
  };
  const at = (size: Size): Run => runs[size];
  const round2 = (value: number): number => Math.round(value * 100) / 100;
  const perSize = (pick: (run: Run) => number): PerSize => ({
    500: round2(pick(at(500))),
    2000: round2(pick(at(2000))),
    8000: round2(pick(at(8000))),
  });
  return {
    speedupVsNaive: round2(at(2000).naive.median / at(2000).incremental.median),
    perOpUs: perSize((run) => run.incremental.median),
    bestPerOpUs: perSize((run) => run.incremental.best),
    naivePerOpUs: perSize((run) => run.naive.median),
    growth8000vs500: round2(at(8000).incremental.best / at(500).incremental.best),
    renderChars2000: at(2000).renderChars,
    exact: SIZES.every((size) => at(size).exact),
  };
}

/** Runs the benchmark. `quick` uses fewer batches and, for o200k, times the naive side at 2,000 only. */
export async function runProjectionBench({ quick }: { quick: boolean }): Promise<ProjectionBenchResult> {
  const heuristic = benchCounter(heuristicCounter, quick);
  // Yield between the two halves so a caller's event loop (progress output) is not starved.
  await new Promise((resolve) => setImmediate(resolve));
  const o200k = benchCounter(o200kCounter, quick);
  return { counter: 'heuristic', quick, ...heuristic, o200k };
}

function printTable(result: ProjectionBenchResult): void {
  const cell = (value: number, digits: number, width: number): string =>
    (Number.isNaN(value) ? '-' : value.toFixed(digits)).padStart(width);
  console.log(
    `projection bench (${result.quick ? 'quick' : 'full'}): ${STATE_KEYS} state keys, µs per tool round`,
  );
  console.log('counter    entries  incremental (best)       naive  speedup');
  for (const [name, r] of [['heuristic', result] as const, ['o200k', result.o200k] as const]) {
    for (const size of SIZES) {
      console.log(
        `${name.padEnd(10)} ${String(size).padStart(7)} ${cell(r.perOpUs[size], 1, 12)} ${cell(r.bestPerOpUs[size], 1, 6)}` +
          ` ${cell(r.naivePerOpUs[size], 0, 11)} ${cell(r.naivePerOpUs[size] / r.perOpUs[size], 0, 7)}x`,
      );
    }
  }
  console.log(
    `speedupVsNaive at 2,000 entries: heuristic ${result.speedupVsNaive}x, o200k ${result.o200k.speedupVsNaive}x; ` +
      `growth 8,000/500 (best): heuristic ${result.growth8000vs500}, o200k ${result.o200k.growth8000vs500}; ` +
      `render at 2,000: ${result.renderChars2000} chars; exact: ${result.exact && result.o200k.exact}`,
  );
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runProjectionBench({ quick: process.argv.includes('--quick') }).then(
    (result) => {
      printTable(result);
      if (process.argv.includes('--json')) console.log(JSON.stringify(result));
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
