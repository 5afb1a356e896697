/**
 * `scaleout.redisVsThreads`: the makespan of N agents x 5 rounds of the simulated model (10 ms per
 * request) on the redis backend with two local `troupe worker` processes, divided by the makespan
 * of the same agents on the thread backend (a Supervisor with 2 threads). N = 1,000 (200 with
 * --quick). Both sides run the same definition (`noop` five times, then `complete_task`), the same
 * provider options and the same tool module, all N agents at once (each worker takes N/2 jobs at a
 * time, as each thread hosts N/2 agents). Target <= 1.5.
 *
 * Steady state, not start-up: the worker processes, the Redis server and both supervisors are
 * started, and each side runs 20 agents and then full fan-outs of N agents until it stops getting
 * faster (support/warmup.ts: 2-10 runs, the same rule for both sides), before any timing. (A cold
 * first fan-out of N took 1.5-2x the later ones on both sides, and with three samples it decided
 * the median; after one, the workers' CPU per request still fell from run to run.) Then REPS
 * fan-outs per side, alternating which side goes first; the figure is the ratio of the medians.
 * Besides wall time the benchmark reads the CPU time every process involved spent in each run
 * (this process, and on the redis side the worker processes and redis-server too, from /proc on
 * Linux): CPU time is what the redis path costs, and other load on the machine changes it far
 * less than wall time.
 *
 * What the ratio prices: a BullMQ job (add, fetch, lock, complete) per batch of up to 32 agents
 * (`maxBatchSize`), and per agent its journal on a Redis Stream instead of a local file, and its
 * signals and result over Redis instead of a MessagePort. Redis runs locally with `appendonly yes` and `appendfsync everysec` (Redis's own
 * default for AOF); `always` is the setting for journals that must survive a server crash. The
 * benchmark reports Redis's `aof_delayed_fsync` counter: writes Redis held back because the
 * previous fsync had not finished (a busy disk), which stalls the redis side alone.
 *
 * Redis's automatic AOF rewrite is off (`auto-aof-rewrite-percentage 0`). Every run keeps its
 * 1,000 journals (as the threads side keeps its files), so the AOF doubled every few runs, and
 * each time Redis forked a child that rewrote the whole data set (100+ MB) at an arbitrary moment:
 * its CPU was counted on neither side, and it took a core from whichever side ran then, threads or
 * redis (the threads side's timed runs fell into a fast and a slow group, ~360 vs ~600 ms, which
 * is part of why the figure swung 1.27-1.75 between full runs). It is background upkeep
 * of Redis's persistence, as writeback of the journal files is the kernel's on the threads side,
 * and neither is priced here; `aofRewrites` reports the rewrites in the timed runs (0).
 *
 * Run: node --import tsx bench/scaleout.ts [--quick]
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisSupervisor } from '../src/supervisor/redis-supervisor.ts';
import { Supervisor } from '../src/supervisor/supervisor.ts';
import {
  killWorkers,
  redisServerPath,
  startWorker,
  TestRedis,
  type TestWorker,
} from '../test/fixtures/scaleout/processes.ts';
import { emitResult, isMain } from './support/child.ts';
import { type BenchOutput, round } from './support/figures.ts';
import { loadAverage } from './support/machine.ts';
import { median } from './support/stats.ts';
import { checked } from './support/targets.ts';
import { processCpuMs } from './support/thread-cpu.ts';
import { STEADY_PATIENCE, STEADY_TOLERANCE, type WarmupRuns, warmUntilSteady } from './support/warmup.ts';
import { assertCompleted, NOOP_TOOL_MODULE, scratchDir, workerDefinition } from './support/workload.ts';

const ROUNDS = 5;
const LATENCY_MS = 10;
const WARMUP_AGENTS = 20;

interface Params {
  readonly agents: number;
  readonly reps: number;
  /** Untimed full-size fan-outs per side before the timed ones (support/warmup.ts). */
  readonly warmup: WarmupRuns;
}

const FULL: Params = { agents: 1000, reps: 5, warmup: { min: 2, max: 10 } };
const QUICK: Params = { agents: 200, reps: 2, warmup: { min: 1, max: 1 } };

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const task = (index: number): string => `Benchmark task ${index}: call noop, then complete.`;
const providers = {
  simulated: { kind: 'simulated' as const, options: { rounds: ROUNDS, latency: LATENCY_MS } },
};

function redisServerVersion(server: string): string {
  const text = execFileSync(server, ['--version'], { encoding: 'utf8' });
  return /v=(\S+)/.exec(text)?.[1] ?? text.trim();
}

/** `INFO <section>` of the server on `port`, or undefined (no redis-cli). */
function redisInfoText(port: number, section: string): string | undefined {
  try {
    return execFileSync('redis-cli', ['-p', String(port), 'INFO', section], { encoding: 'utf8' });
  } catch {
    return undefined;
  }
}

/** Calls of every command the server on `port` has run (`INFO commandstats`). */
function redisCommandCalls(port: number): Map<string, number> {
  const calls = new Map<string, number>();
  for (const match of (redisInfoText(port, 'commandstats') ?? '').matchAll(
    /^cmdstat_([^:]+):calls=(\d+)/gm,
  )) {
    if (match[1] !== undefined) calls.set(match[1], Number(match[2]));
  }
  return calls;
}

/** One field of `INFO persistence` of the server on `port`, or undefined. */
function redisInfo(port: number, field: string): number | undefined {
  try {
    const text = redisInfoText(port, 'persistence');
    if (text === undefined) return undefined;
    const match = new RegExp(`^${field}:(\\d+)`, 'm').exec(text);
    return match?.[1] === undefined ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

/** One timed fan-out. */
interface Run {
  readonly wallMs: number;
  /** CPU ms of this process (the supervisor; on the threads side, its hosts too). */
  readonly supervisorCpuMs: number;
  /** CPU ms of the worker processes (redis side; null on the threads side or without /proc). */
  readonly workersCpuMs: number | null;
  /** CPU ms of redis-server (redis side; null on the threads side or without /proc). */
  readonly redisCpuMs: number | null;
  /** Sum of the three. */
  readonly cpuMs: number;
  readonly load: number;
}

async function timed(run: () => Promise<void>, others: () => readonly (number | undefined)[]): Promise<Run> {
  const before = others();
  const cpu = process.cpuUsage();
  const start = performance.now();
  await run();
  const wallMs = round(performance.now() - start, 1);
  const used = process.cpuUsage(cpu);
  const after = others();
  const supervisorCpuMs = round((used.user + used.system) / 1000, 1);
  const delta = (i: number): number | null => {
    const a = after[i];
    const b = before[i];
    return a === undefined || b === undefined ? null : a - b;
  };
  const workersCpuMs = before.length === 0 ? null : delta(0);
  const redisCpuMs = before.length === 0 ? null : delta(1);
  return {
    wallMs,
    supervisorCpuMs,
    workersCpuMs,
    redisCpuMs,
    cpuMs: round(supervisorCpuMs + (workersCpuMs ?? 0) + (redisCpuMs ?? 0), 1),
    load: loadAverage(),
  };
}

/** Runs the benchmark; see the module comment. Throws when redis-server is not installed. */
export async function runScaleoutBench({ quick }: { readonly quick: boolean }): Promise<BenchOutput> {
  const server = redisServerPath;
  if (server === undefined) {
    throw new Error(
      'scaleout.redisVsThreads needs redis-server (apt install redis-server); it is not installed',
    );
  }
  const { agents, reps, warmup: warmupRuns } = quick ? QUICK : FULL;
  const definition = workerDefinition();
  const cwd = scratchDir('scaleout');
  const redis = await TestRedis.start({ appendfsync: 'everysec', autoAofRewrite: false });
  const queueName = `bench-${process.pid}`;
  const shared = {
    cwd: cwd.dir,
    compat: false,
    definitions: [definition],
    toolModules: [NOOP_TOOL_MODULE],
    providers,
  };
  const threads = new Supervisor({ ...shared, threads: 2, journalDir: path.join(cwd.dir, 'journals') });
  const remote = new RedisSupervisor({ ...shared, redisUrl: redis.url, queueName });
  let workers: TestWorker[] = [];
  const fanOut = (supervisor: Supervisor | RedisSupervisor, count: number) => async () => {
    const results = await supervisor
      .fanOut(Array.from({ length: count }, (_, index) => ({ agent: definition.name, task: task(index) })))
      .all();
    assertCompleted(
      results.map((result) => result.outcome),
      'scale-out fan-out',
    );
  };
  const remoteCpu = (): (number | undefined)[] => {
    const perWorker = workers.map((worker) => processCpuMs(worker.pid));
    const total = perWorker.some((ms) => ms === undefined)
      ? undefined
      : perWorker.reduce<number>((sum, ms) => sum + (ms ?? 0), 0);
    return [total, processCpuMs(redis.pid)];
  };
  const threadsRun = (): Promise<Run> => timed(fanOut(threads, agents), () => []);
  const redisRun = (): Promise<Run> => timed(fanOut(remote, agents), remoteCpu);
  try {
    const args = ['--queue', queueName, '--concurrency', String(agents / 2)];
    workers = await Promise.all([startWorker(redis.url, args), startWorker(redis.url, args)]);
    await Promise.all([threads.start(), remote.start()]);
    await fanOut(threads, WARMUP_AGENTS)();
    await fanOut(remote, WARMUP_AGENTS)();
    // Untimed full-size fan-outs per side until it stops getting faster: JIT in every isolate,
    // heaps, connection pools, Redis memory (support/warmup.ts).
    const warmThreads = await warmUntilSteady(threadsRun, warmupRuns);
    const warmRedis = await warmUntilSteady(redisRun, warmupRuns);
    const walls = (runs: readonly Run[]): string => runs.map((r) => r.wallMs).join(', ');
    process.stdout.write(
      `scaleout N=${agents} (warm-up): threads ${walls(warmThreads)} ms, redis ${walls(warmRedis)} ms\n`,
    );
    const delayedFsyncBefore = redisInfo(redis.port, 'aof_delayed_fsync');
    const rewritesBefore = redisInfo(redis.port, 'aof_rewrites');
    const callsBefore = redisCommandCalls(redis.port);
    const threadsRuns: Run[] = [];
    const redisRuns: Run[] = [];
    for (let rep = 0; rep < reps; rep += 1) {
      // Alternate the order so drift in machine load falls on both sides.
      if (rep % 2 === 0) {
        threadsRuns.push(await threadsRun());
        redisRuns.push(await redisRun());
      } else {
        redisRuns.push(await redisRun());
        threadsRuns.push(await threadsRun());
      }
      const t = threadsRuns.at(-1);
      const r = redisRuns.at(-1);
      process.stdout.write(
        `scaleout N=${agents}: threads ${t?.wallMs} ms (CPU ${t?.cpuMs} ms), redis ${r?.wallMs} ms (CPU ${r?.cpuMs} ms: supervisor ${r?.supervisorCpuMs}, workers ${r?.workersCpuMs}, redis-server ${r?.redisCpuMs}), load ${r?.load}\n`,
      );
    }
    const delayedFsyncAfter = redisInfo(redis.port, 'aof_delayed_fsync');
    const rewritesAfter = redisInfo(redis.port, 'aof_rewrites');
    const callsAfter = redisCommandCalls(redis.port);
    // Commands per agent on the redis side (the threads side sends none), Lua's inner calls included.
    const commandsPerAgent = Object.fromEntries(
      [...callsAfter]
        .map(
          ([name, calls]) =>
            [name, round((calls - (callsBefore.get(name) ?? 0)) / (agents * reps), 2)] as const,
        )
        .filter(([name, perAgent]) => perAgent > 0 && name !== 'info')
        .sort((a, b) => b[1] - a[1]),
    );
    const wall = (runs: readonly Run[]): number => median(runs.map((r) => r.wallMs));
    const cpu = (runs: readonly Run[], pick: (r: Run) => number | null = (r) => r.cpuMs): number | null => {
      const values = runs.flatMap((r) => {
        const value = pick(r);
        return value === null ? [] : [value];
      });
      return values.length === 0 ? null : median(values);
    };
    const threadsMs = wall(threadsRuns);
    const redisMs = wall(redisRuns);
    const ratios = threadsRuns.map((t, i) => round((redisRuns[i]?.wallMs ?? Number.NaN) / t.wallMs, 3));
    const requests = agents * (ROUNDS + 1);
    const perRequestUs = (ms: number | null): number | null =>
      ms === null ? null : round((ms * 1000) / requests, 1);
    const threadsCpu = cpu(threadsRuns);
    const redisCpu = cpu(redisRuns);
    return {
      figures: {
        'scaleout.redisVsThreads': checked('scaleout.redisVsThreads', redisMs / threadsMs, 'ratio', 3),
      },
      details: {
        note: `${agents} agents x ${ROUNDS} rounds, simulated ${LATENCY_MS} ms; redis: 2 local worker processes x ${agents / 2} jobs, appendfsync everysec; threads: Supervisor with 2 threads; median of ${reps} runs per side after warm-up runs until each side stopped getting faster`,
        redisVersion: redisServerVersion(server),
        agents,
        rounds: ROUNDS,
        latencyMs: LATENCY_MS,
        reps,
        redisMs,
        threadsMs,
        /** Each alternated pair's ratio: the spread of the figure within this run. */
        pairRatios: ratios,
        /** Fastest run of each side: other load on the machine only ever adds time. */
        bestRatio: round(
          Math.min(...redisRuns.map((r) => r.wallMs)) / Math.min(...threadsRuns.map((r) => r.wallMs)),
          3,
        ),
        /** CPU ms of every process involved, median run: the work each side does. */
        threadsCpuMs: threadsCpu,
        redisCpuMs: redisCpu,
        cpuRatio: threadsCpu !== null && redisCpu !== null ? round(redisCpu / threadsCpu, 3) : null,
        /** µs of CPU per model request (N x 6), all processes, and the redis side by process. */
        cpuPerRequestUs: {
          threads: perRequestUs(threadsCpu),
          redis: perRequestUs(redisCpu),
          redisSupervisor: perRequestUs(cpu(redisRuns, (r) => r.supervisorCpuMs)),
          redisWorkers: perRequestUs(cpu(redisRuns, (r) => r.workersCpuMs)),
          redisServer: perRequestUs(cpu(redisRuns, (r) => r.redisCpuMs)),
        },
        /**
         * Redis commands per agent in the timed runs, by command (`INFO commandstats`: the
         * commands Lua scripts run count too, besides the EVALSHA itself).
         */
        redisCommandsPerAgent: commandsPerAgent,
        redisCommandsPerRequest: round(
          Object.values(commandsPerAgent).reduce((sum, n) => sum + n, 0) / (ROUNDS + 1),
          1,
        ),
        /** Writes Redis delayed during the timed runs because an fsync was still running. */
        aofDelayedFsync:
          delayedFsyncBefore === undefined || delayedFsyncAfter === undefined
            ? null
            : delayedFsyncAfter - delayedFsyncBefore,
        /** AOF rewrites during the timed runs: 0, automatic rewrites are off (see the module comment). */
        aofRewrites:
          rewritesBefore === undefined || rewritesAfter === undefined ? null : rewritesAfter - rewritesBefore,
        /** The untimed full-size fan-outs of each side, in order (support/warmup.ts). */
        warmup: {
          threads: warmThreads,
          redis: warmRedis,
          steadyTolerance: STEADY_TOLERANCE,
          steadyPatience: STEADY_PATIENCE,
        },
        threadsRuns,
        redisRuns,
        /** Lower bound of either makespan: every agent's requests back to back. */
        idealMs: (ROUNDS + 1) * LATENCY_MS,
      },
    };
  } finally {
    await Promise.allSettled([threads.close(), remote.close()]);
    await killWorkers(workers);
    await redis.destroy();
    cwd.remove();
  }
}

if (isMain(import.meta.url)) {
  process.chdir(repoRoot);
  const result = await runScaleoutBench({ quick: process.argv.includes('--quick') });
  console.log(JSON.stringify(result, null, 2));
  emitResult(result);
}
