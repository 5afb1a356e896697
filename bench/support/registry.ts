/**
 * Every benchmark the runner knows: how to start its child process, which figures it reports, and
 * when it cannot run here. Modules are imported lazily, inside the child that runs them.
 */
import { execFileSync } from 'node:child_process';
import type { BenchOptions, BenchOutput } from './figures.ts';
import { checked, targetText } from './targets.ts';

/** A figure a benchmark reports, as the table shows it when the benchmark fails or is skipped. */
export interface FigureSpec {
  readonly name: string;
  readonly unit: string;
  readonly target: string | null;
}

/** The figure `name` with its target from `TARGETS` (none when it has no target there). */
function spec(name: string, unit: string): FigureSpec {
  return { name, unit, target: targetText(name) };
}

/** One benchmark. */
export interface BenchEntry {
  /** `--only` name. */
  readonly name: string;
  readonly figures: readonly FigureSpec[];
  /** Node flags of its child process. */
  readonly execArgv: readonly string[];
  /** The child is killed after this long. */
  readonly timeoutMs: (options: BenchOptions) => number;
  /** Why it cannot run here, or undefined when it can. */
  readonly unavailable?: (options: BenchOptions) => string | undefined;
  /** Runs it (inside the child). */
  readonly run: (options: BenchOptions) => Promise<BenchOutput>;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;

function hasRedisServer(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The benchmarks in the order they run (cheap and independent ones first). */
export const BENCHES: readonly BenchEntry[] = [
  {
    name: 'projection',
    figures: [spec('projection.speedupVsNaive', 'x')],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 10 * MINUTE),
    run: async ({ quick }) => {
      const { runProjectionBench } = await import('../projection.ts');
      const result = await runProjectionBench({ quick });
      return {
        figures: {
          'projection.speedupVsNaive': checked('projection.speedupVsNaive', result.speedupVsNaive, 'x', 1),
        },
        details: { ...result },
      };
    },
  },
  {
    name: 'hostile-inputs',
    figures: [spec('tokens.repeatedChars200kMs', 'ms')],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 5 * MINUTE),
    run: async (options) => (await import('../hostile-inputs.ts')).runHostileInputsBench(options),
  },
  {
    name: 'fanout-overhead',
    figures: [
      spec('fanout.overhead', 'ratio'),
      spec('fanout.agentRoundsPerSec', 'rounds/s'),
      spec('fanout.firstRunOverhead', 'ratio'),
    ],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 15 * MINUTE),
    run: async (options) => (await import('../fanout-overhead.ts')).runFanoutOverheadBench(options),
  },
  {
    name: 'latency-efficiency',
    figures: [
      spec('fanout.latencyEfficiency', 'ratio'),
      spec('cpuPerRequestUs', 'µs'),
      spec('cpuPerRequestUs.main', 'µs'),
      spec('cpuPerRequestUs.host0', 'µs'),
      spec('cpuPerRequestUs.host1', 'µs'),
      spec('cpuPerRequestUs.other', 'µs'),
    ],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 10 * MINUTE),
    run: async (options) => (await import('../latency-efficiency.ts')).runLatencyEfficiencyBench(options),
  },
  {
    name: 'routing',
    figures: [spec('routing.instructionP50Us', 'us'), spec('routing.instructionP99Us', 'us')],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 10 * MINUTE),
    run: async (options) => (await import('../routing.ts')).runRoutingBench(options),
  },
  {
    name: 'memory',
    figures: [spec('memory.waitingAgentBytes', 'bytes')],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 10 * MINUTE),
    run: async (options) => (await import('../memory.ts')).runMemoryBench(options),
  },
  {
    name: 'peer',
    figures: [spec('peer.openaiAgentsRatio', 'ratio'), spec('peer.langgraphRatio', 'ratio')],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 15 * MINUTE),
    run: async (options) => (await import('../peer.ts')).runPeerBench(options),
  },
  {
    name: 'scaleout',
    figures: [spec('scaleout.redisVsThreads', 'ratio')],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 20 * MINUTE),
    unavailable: ({ quick }) =>
      quick && !hasRedisServer()
        ? 'no redis-server binary installed (the quick run skips scale-out)'
        : undefined,
    // Without redis-server, a full run fails here with the reason (apt install redis-server).
    run: async (options) => (await import('../scaleout.ts')).runScaleoutBench(options),
  },
];

/** The benchmark called `name`. */
export function benchByName(name: string): BenchEntry | undefined {
  return BENCHES.find((bench) => bench.name === name);
}
