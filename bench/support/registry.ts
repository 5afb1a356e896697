/**
 * Every benchmark the runner knows: how to start its child process, which figures it reports, and
 * when it cannot run here. Modules are imported lazily, inside the child that runs them.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type BenchOptions, type BenchOutput, type Figure, figure, untargeted } from './figures.ts';

/** A figure a benchmark reports, as the table shows it when the benchmark fails or is skipped. */
export interface FigureSpec {
  readonly name: string;
  readonly unit: string;
  readonly target: string | null;
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

const SCALEOUT_FILE = fileURLToPath(new URL('../scaleout.ts', import.meta.url));

function hasRedisServer(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Reads whatever shape `runScaleoutBench` returns: a BenchOutput, or a bare ratio. */
function scaleoutOutput(result: unknown): BenchOutput {
  const record = (result ?? {}) as Record<string, unknown>;
  if (typeof record.figures === 'object' && record.figures !== null) return result as BenchOutput;
  const value = [record.redisVsThreads, record.value].find((v): v is number => typeof v === 'number');
  if (value === undefined) throw new Error('runScaleoutBench returned no redisVsThreads figure');
  const target = typeof record.target === 'number' ? record.target : undefined;
  const scaleout: Figure =
    target === undefined ? untargeted(value, 'ratio', 3) : figure(value, 'ratio', '<=', target, 3);
  return { figures: { 'scaleout.redisVsThreads': scaleout }, details: record };
}

/** The benchmarks in the order they run (cheap and independent ones first). */
export const BENCHES: readonly BenchEntry[] = [
  {
    name: 'projection',
    figures: [{ name: 'projection.speedupVsNaive', unit: 'x', target: '>= 50' }],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 10 * MINUTE),
    run: async ({ quick }) => {
      const { runProjectionBench } = await import('../projection.ts');
      const result = await runProjectionBench({ quick });
      return {
        figures: { 'projection.speedupVsNaive': figure(result.speedupVsNaive, 'x', '>=', 50, 1) },
        details: { ...result },
      };
    },
  },
  {
    name: 'hostile-inputs',
    figures: [{ name: 'tokens.repeatedChars200kMs', unit: 'ms', target: '< 100' }],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 5 * MINUTE),
    run: async (options) => (await import('../hostile-inputs.ts')).runHostileInputsBench(options),
  },
  {
    name: 'fanout-overhead',
    figures: [
      { name: 'fanout.overhead', unit: 'ratio', target: '<= 1' },
      { name: 'fanout.agentRoundsPerSec', unit: 'rounds/s', target: '>= 10000' },
    ],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 15 * MINUTE),
    run: async (options) => (await import('../fanout-overhead.ts')).runFanoutOverheadBench(options),
  },
  {
    name: 'latency-efficiency',
    figures: [
      { name: 'fanout.latencyEfficiency', unit: 'ratio', target: '<= 1.1' },
      { name: 'cpuPerRequestUs', unit: 'µs', target: null },
    ],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 10 * MINUTE),
    run: async (options) => (await import('../latency-efficiency.ts')).runLatencyEfficiencyBench(options),
  },
  {
    name: 'routing',
    figures: [
      { name: 'routing.instructionP50Us', unit: 'us', target: '<= 200' },
      { name: 'routing.instructionP99Us', unit: 'us', target: null },
    ],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 10 * MINUTE),
    run: async (options) => (await import('../routing.ts')).runRoutingBench(options),
  },
  {
    name: 'memory',
    figures: [{ name: 'memory.waitingAgentBytes', unit: 'bytes', target: '<= 65536' }],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 10 * MINUTE),
    run: async (options) => (await import('../memory.ts')).runMemoryBench(options),
  },
  {
    name: 'peer',
    figures: [{ name: 'peer.openaiAgentsRatio', unit: 'ratio', target: '< 1' }],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 15 * MINUTE),
    run: async (options) => (await import('../peer.ts')).runPeerBench(options),
  },
  {
    name: 'scaleout',
    figures: [{ name: 'scaleout.redisVsThreads', unit: 'ratio', target: null }],
    execArgv: [],
    timeoutMs: ({ quick }) => (quick ? 2 * MINUTE : 20 * MINUTE),
    unavailable: ({ quick }) => {
      if (!existsSync(SCALEOUT_FILE)) return 'bench/scaleout.ts does not exist yet (scale-out issue)';
      if (quick && !hasRedisServer())
        return 'no redis-server binary installed (the quick run skips scale-out)';
      return undefined;
    },
    run: async ({ quick }) => {
      // A variable specifier: the file belongs to the scale-out work and may not exist in this tree.
      const specifier = '../scaleout.ts';
      const mod = (await import(specifier)) as { runScaleoutBench?: (o: BenchOptions) => Promise<unknown> };
      if (typeof mod.runScaleoutBench !== 'function')
        throw new Error('bench/scaleout.ts exports no runScaleoutBench');
      return scaleoutOutput(await mod.runScaleoutBench({ quick }));
    },
  },
];

/** The benchmark called `name`. */
export function benchByName(name: string): BenchEntry | undefined {
  return BENCHES.find((bench) => bench.name === name);
}
