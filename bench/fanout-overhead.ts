/**
 * `fanout.overhead`: N agents x R rounds of the simulated model with zero latency, run by the
 * Supervisor on 2 threads, against the same agents run by the same loop in-process on the main
 * thread (no threads). value = supervisor wall time / in-process wall time; target <= 0.67 (threads
 * at least 1.5x the in-process throughput).
 *
 * Both sides run the same definition (`noop` R times, then `complete_task`), the same simulated
 * model options (`rounds: R`), and journal every agent to its own JSONL file with the same fsync
 * policy, the supervisor's default (the supervisor cannot run without journals, so the baseline
 * keeps them too). Threads are started and both sides warmed up before timing: the figure is
 * steady-state fan-out, not start-up. Warm-up: 20 agents, then untimed runs of the full N on each
 * side until that side stops getting faster (support/warmup.ts: two runs in a row whose CPU time
 * is no more than 5 % below the fastest run before them, at least {@link Params.warmup} `min`
 * runs, at most `max`). Every isolate compiles the hot code for itself, so the supervisor (its main
 * thread and two hosts, each seeing half the agents) needs more agents than the in-process loop to
 * stop compiling: after one full-size run its V8 helper threads were still compiling through the
 * timed runs, which got 25-35 % faster from the first to the third (bench/RESULTS.md, lead
 * session 4). The same rule ends both sides' warm-up; the first
 * full-size run of each side is reported as `fanout.firstRunOverhead` (what a fresh process pays).
 * Also sweeps N for the makespan plot (bench/makespan.svg on a full run).
 *
 * Run: node --import tsx bench/fanout-overhead.ts [--quick]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { emitResult, isMain } from './support/child.ts';
import { type BenchOptions, type BenchOutput, round } from './support/figures.ts';
import { loadAverage } from './support/machine.ts';
import { median } from './support/stats.ts';
import { lineChart } from './support/svg.ts';
import { checked } from './support/targets.ts';
import { type CpuMs, cpuSince, threadCpu } from './support/thread-cpu.ts';
import { STEADY_PATIENCE, STEADY_TOLERANCE, type WarmupRuns, warmUntilSteady } from './support/warmup.ts';
import {
  assertCompleted,
  fanoutSupervisor,
  inProcessSimulated,
  journalCreateUs,
  runInProcess,
  scratchDir,
  workerDefinition,
} from './support/workload.ts';

const ROUNDS = 8;
const THREADS = 2;
const WARMUP_AGENTS = 20;

interface Params {
  readonly agents: number;
  readonly reps: number;
  readonly sweep: readonly number[];
  /** Untimed full-size runs per side before the timed ones: see the module comment. */
  readonly warmup: WarmupRuns;
}

const FULL: Params = {
  agents: 1000,
  reps: 5,
  sweep: [100, 250, 500, 1000, 2000],
  warmup: { min: 2, max: 10 },
};
const QUICK: Params = { agents: 100, reps: 1, sweep: [50, 100], warmup: { min: 1, max: 1 } };

/**
 * CPU milliseconds (user + system) of one run by thread (Linux): the main thread, each actor host,
 * and every other thread (V8's compiler and GC helpers, libuv's pool). On the in-process side the
 * hosts are the supervisor's, idle. What the thread path adds over the in-process loop shows here
 * (bench/RESULTS.md, path25).
 */
interface ByThreadMs {
  readonly main: number;
  readonly hosts: readonly number[];
  readonly other: number;
}

/** One timed run: wall time and CPU time of the whole process (every thread). */
interface Sample {
  readonly agents: number;
  readonly wallMs: number;
  readonly cpuMs: number;
  /** Absent where /proc/self/task is not readable. */
  readonly byThreadMs?: ByThreadMs;
}

async function timed(agents: number, work: () => Promise<void>): Promise<Sample> {
  // Read outside the process-wide reading, which stays what it always was.
  const threadsBefore = threadCpu();
  const cpu = process.cpuUsage();
  const start = performance.now();
  await work();
  const wallMs = performance.now() - start;
  const used = process.cpuUsage(cpu);
  const threadsAfter = threadCpu();
  const sample = { agents, wallMs: round(wallMs, 1), cpuMs: round((used.user + used.system) / 1000, 1) };
  if (!threadsBefore || !threadsAfter) return sample;
  const byThread = cpuSince(threadsBefore, threadsAfter);
  const ms = (c: CpuMs): number => c.userMs + c.systemMs;
  const hosts = Object.entries(byThread.hosts)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([, c]) => ms(c));
  return { ...sample, byThreadMs: { main: ms(byThread.main), hosts, other: ms(byThread.other) } };
}

/** The run whose wall time is the median of `samples` (the lower middle one of an even count). */
function medianRun(samples: readonly Sample[]): Sample | undefined {
  const sorted = [...samples].sort((a, b) => a.wallMs - b.wallMs);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

const task = (index: number): string => `Benchmark task ${index}: call noop, then complete.`;

/** Where a full run's plot goes (committed); a quick run's goes to the ignored results folder. */
export function makespanPlotPath(quick: boolean): string {
  const file = quick ? 'results/makespan-quick.svg' : 'makespan.svg';
  return fileURLToPath(new URL(file, import.meta.url));
}

/** Runs the benchmark; see the module comment. */
export async function runFanoutOverheadBench(options: BenchOptions): Promise<BenchOutput> {
  const params = options.quick ? QUICK : FULL;
  const definition = workerDefinition();
  const cwd = scratchDir('cwd');
  const journals = scratchDir('journals');
  const supervisor = fanoutSupervisor({
    threads: THREADS,
    cwd: cwd.dir,
    journalDir: path.join(journals.dir, 'supervisor'),
    definition,
    rounds: ROUNDS,
  });
  const provider = await inProcessSimulated({ rounds: ROUNDS });
  const fsync = supervisor.options.fsync;
  let run = 0;
  const viaSupervisor = (agents: number): Promise<Sample> =>
    timed(agents, async () => {
      const handles = Array.from({ length: agents }, (_, i) =>
        supervisor.spawn('bench-worker', { task: task(i) }),
      );
      assertCompleted(await Promise.all(handles.map((h) => h.result)), 'supervisor fan-out');
    });
  const inProcess = (agents: number, journal = true): Promise<Sample> => {
    run += 1;
    const journalDir = journal ? path.join(journals.dir, `in-process-${run}`) : undefined;
    return timed(agents, async () => {
      const outcomes = await runInProcess({
        agents,
        definition,
        provider,
        task,
        cwd: cwd.dir,
        journalDir,
        fsync,
      });
      assertCompleted(outcomes, 'in-process fan-out');
    });
  };

  try {
    const startedAt = performance.now();
    await supervisor.start();
    const threadStartMs = round(performance.now() - startedAt, 1);
    await viaSupervisor(WARMUP_AGENTS);
    await inProcess(WARMUP_AGENTS);
    const createUs = journalCreateUs(journals.dir);
    // Untimed runs of the full N per side until it stops getting faster: see the module comment.
    const warmup = {
      supervisor: await warmUntilSteady(() => viaSupervisor(params.agents), params.warmup),
      inProcess: await warmUntilSteady(() => inProcess(params.agents), params.warmup),
    };
    const walls = (samples: readonly Sample[]): string => samples.map((s) => s.wallMs).join(', ');
    process.stdout.write(
      `fanout N=${params.agents} (warm-up): in-process ${walls(warmup.inProcess)} ms, supervisor ${walls(warmup.supervisor)} ms\n`,
    );
    const firstRun = { supervisor: warmup.supervisor[0], inProcess: warmup.inProcess[0] };

    const supervisorRuns: Sample[] = [];
    const inProcessRuns: Sample[] = [];
    for (const agents of params.sweep) {
      const reps = agents === params.agents ? params.reps : 1;
      for (let rep = 0; rep < reps; rep += 1) {
        // Alternate the order so drift in machine load falls on both sides.
        if (rep % 2 === 0) {
          inProcessRuns.push(await inProcess(agents));
          supervisorRuns.push(await viaSupervisor(agents));
        } else {
          supervisorRuns.push(await viaSupervisor(agents));
          inProcessRuns.push(await inProcess(agents));
        }
        process.stdout.write(
          `fanout N=${agents}: in-process ${inProcessRuns.at(-1)?.wallMs} ms, supervisor ${supervisorRuns.at(-1)?.wallMs} ms\n`,
        );
      }
    }
    const noJournal = options.quick ? undefined : await inProcess(params.agents, false);

    const at = (samples: readonly Sample[], agents: number): Sample[] =>
      samples.filter((s) => s.agents === agents);
    const wall = (samples: readonly Sample[]): number => median(samples.map((s) => s.wallMs));
    const cpu = (samples: readonly Sample[]): number => median(samples.map((s) => s.cpuMs));
    const best = (samples: readonly Sample[]): number => Math.min(...samples.map((s) => s.wallMs));
    const supervisorMs = wall(at(supervisorRuns, params.agents));
    const inProcessMs = wall(at(inProcessRuns, params.agents));
    const toolRounds = params.agents * ROUNDS;
    const series = (samples: readonly Sample[]) =>
      params.sweep.map((agents) => [agents, wall(at(samples, agents))] as const);

    const plot = makespanPlotPath(options.quick);
    mkdirSync(path.dirname(plot), { recursive: true });
    writeFileSync(
      plot,
      lineChart({
        title: `Makespan vs N: ${ROUNDS} rounds per agent, simulated model, zero latency`,
        subtitle: `Supervisor (${THREADS} threads) vs the same loop on the main thread. 1 run per point (N=${params.agents}: median of ${params.reps}), load avg ${loadAverage()}${options.quick ? ', quick run' : ''}`,
        xLabel: 'agents (N)',
        yLabel: 'makespan (ms)',
        series: [
          { label: `Supervisor, ${THREADS} threads`, color: '#1f77b4', points: series(supervisorRuns) },
          { label: 'in-process, main thread', color: '#d62728', points: series(inProcessRuns) },
        ],
      }),
    );

    return {
      figures: {
        'fanout.overhead': checked('fanout.overhead', supervisorMs / inProcessMs, 'ratio', 3),
        /** Tool rounds of all agents per second of Supervisor wall time (N agents x 8 rounds). */
        'fanout.agentRoundsPerSec': checked(
          'fanout.agentRoundsPerSec',
          toolRounds / (supervisorMs / 1000),
          'rounds/s',
          0,
        ),
        /** The first full-size run of each side (cold JIT in every isolate): what a fresh process pays. */
        'fanout.firstRunOverhead': checked(
          'fanout.firstRunOverhead',
          (firstRun.supervisor?.wallMs ?? Number.NaN) / (firstRun.inProcess?.wallMs ?? Number.NaN),
          'ratio',
          3,
        ),
      },
      details: {
        agents: params.agents,
        rounds: ROUNDS,
        threads: THREADS,
        fsync,
        reps: params.reps,
        threadStartMs,
        /** Creating one journal file here, measured before the runs (both sides create one per agent). */
        journalCreateUs: createUs,
        supervisorMs,
        inProcessMs,
        supervisorUsPerToolRound: round((supervisorMs * 1000) / toolRounds, 1),
        inProcessUsPerToolRound: round((inProcessMs * 1000) / toolRounds, 1),
        supervisorCpuMs: cpu(at(supervisorRuns, params.agents)),
        inProcessCpuMs: cpu(at(inProcessRuns, params.agents)),
        /** CPU time of every thread, supervisor / in-process: the work threading adds, whatever the load. */
        cpuRatio: round(cpu(at(supervisorRuns, params.agents)) / cpu(at(inProcessRuns, params.agents)), 3),
        /**
         * CPU by thread of each side's median run at N (ms, user + system; /proc's 10 ms ticks):
         * the supervisor's main thread, each host and the other threads, against the in-process
         * main thread and its other threads. Every run's is in `supervisorRuns` / `inProcessRuns`.
         */
        cpuByThreadMs: {
          supervisor: medianRun(at(supervisorRuns, params.agents))?.byThreadMs ?? null,
          inProcess: medianRun(at(inProcessRuns, params.agents))?.byThreadMs ?? null,
        },
        /** Fastest run of each side: other load on the machine only ever adds time. */
        bestRatio: round(best(at(supervisorRuns, params.agents)) / best(at(inProcessRuns, params.agents)), 3),
        inProcessNoJournalMs: noJournal?.wallMs ?? null,
        /**
         * The untimed full-size runs of each side before the sweep, in order (the first one with
         * cold JIT: what start-up costs), ending with the second run in a row that was not 5 %
         * faster than the fastest before it.
         */
        warmup,
        steadyTolerance: STEADY_TOLERANCE,
        steadyPatience: STEADY_PATIENCE,
        supervisorRuns,
        inProcessRuns,
        plot: path.relative(process.cwd(), plot),
      },
    };
  } finally {
    await supervisor.close();
    cwd.remove();
    journals.remove();
  }
}

if (isMain(import.meta.url)) {
  const result = await runFanoutOverheadBench({ quick: process.argv.includes('--quick') });
  console.log(JSON.stringify(result, null, 2));
  emitResult(result);
}
