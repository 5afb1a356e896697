/**
 * `scaleout.redisVsThreads`: the makespan of N agents x 5 rounds of the simulated model (10 ms per
 * request) on the redis backend with two local `troupe worker` processes, divided by the makespan
 * of the same agents on the thread backend (a Supervisor with 2 threads). N = 1,000 (200 with
 * --quick). Both sides run the same definition (`noop` five times, then `complete_task`), the same
 * provider options and the same tool module, all N agents at once (each worker takes N/2 jobs at a
 * time, as each thread hosts N/2 agents); both are warmed up before timing.
 *
 * What the ratio prices: per agent, a BullMQ job (add, fetch, lock, complete), its journal on a
 * Redis Stream instead of a local file, and its signals and result over Redis instead of a
 * MessagePort. Redis runs locally with `appendonly yes` and `appendfsync everysec` (Redis's own
 * default for AOF); `always` is the setting for journals that must survive a server crash.
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
import { median } from './support/stats.ts';
import { assertCompleted, NOOP_TOOL_MODULE, scratchDir, workerDefinition } from './support/workload.ts';

const ROUNDS = 5;
const LATENCY_MS = 10;
const WARMUP_AGENTS = 20;
/**
 * Ceiling of the ratio. The redis side does strictly more work on the same cores (a Redis server,
 * two worker processes and the supervisor instead of one process): every journal batch, signal,
 * job fetch and result is a Redis round trip instead of a MessagePort post.
 */
const TARGET = 3;

/** What {@link runScaleoutBench} reports. */
export interface ScaleoutBenchResult {
  /** Redis makespan / threads makespan. */
  readonly value: number;
  readonly unit: 'ratio';
  readonly target: number;
  readonly meets: boolean;
  readonly note: string;
  readonly redisVersion: string;
  readonly agents: number;
  readonly rounds: number;
  readonly latencyMs: number;
  readonly redisMs: number;
  readonly threadsMs: number;
  readonly redisRuns: readonly number[];
  readonly threadsRuns: readonly number[];
  /** Lower bound of either makespan: every agent's requests back to back. */
  readonly idealMs: number;
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const task = (index: number): string => `Benchmark task ${index}: call noop, then complete.`;
const providers = {
  simulated: { kind: 'simulated' as const, options: { rounds: ROUNDS, latency: LATENCY_MS } },
};

function redisServerVersion(server: string): string {
  const text = execFileSync(server, ['--version'], { encoding: 'utf8' });
  return /v=(\S+)/.exec(text)?.[1] ?? text.trim();
}

async function makespan(run: (agents: number) => Promise<void>, agents: number): Promise<number> {
  const start = performance.now();
  await run(agents);
  return Math.round(performance.now() - start);
}

/** Runs the benchmark; see the module comment. Throws when redis-server is not installed. */
export async function runScaleoutBench({ quick }: { readonly quick: boolean }): Promise<ScaleoutBenchResult> {
  const server = redisServerPath;
  if (server === undefined) {
    throw new Error(
      'scaleout.redisVsThreads needs redis-server (apt install redis-server); it is not installed',
    );
  }
  const agents = quick ? 200 : 1000;
  const reps = quick ? 1 : 3;
  const definition = workerDefinition();
  const cwd = scratchDir('scaleout');
  const redis = await TestRedis.start({ appendfsync: 'everysec' });
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
  const fanOut = (supervisor: Supervisor | RedisSupervisor) => async (count: number) => {
    const results = await supervisor
      .fanOut(Array.from({ length: count }, (_, index) => ({ agent: definition.name, task: task(index) })))
      .all();
    assertCompleted(
      results.map((result) => result.outcome),
      'scale-out fan-out',
    );
  };
  try {
    const args = ['--queue', queueName, '--concurrency', String(agents / 2)];
    workers = await Promise.all([startWorker(redis.url, args), startWorker(redis.url, args)]);
    await Promise.all([threads.start(), remote.start()]);
    await fanOut(threads)(WARMUP_AGENTS);
    await fanOut(remote)(WARMUP_AGENTS);
    const threadsRuns: number[] = [];
    const redisRuns: number[] = [];
    for (let rep = 0; rep < reps; rep += 1) {
      // Alternate the order so drift in machine load falls on both sides.
      if (rep % 2 === 0) {
        threadsRuns.push(await makespan(fanOut(threads), agents));
        redisRuns.push(await makespan(fanOut(remote), agents));
      } else {
        redisRuns.push(await makespan(fanOut(remote), agents));
        threadsRuns.push(await makespan(fanOut(threads), agents));
      }
      process.stdout.write(
        `scaleout N=${agents}: threads ${threadsRuns.at(-1)} ms, redis ${redisRuns.at(-1)} ms\n`,
      );
    }
    const threadsMs = median(threadsRuns);
    const redisMs = median(redisRuns);
    const value = Math.round((redisMs / threadsMs) * 1000) / 1000;
    return {
      value,
      unit: 'ratio',
      target: TARGET,
      meets: value <= TARGET,
      note: `${agents} agents x ${ROUNDS} rounds, simulated ${LATENCY_MS} ms; redis: 2 local worker processes x ${agents / 2} jobs, appendfsync everysec; threads: Supervisor with 2 threads`,
      redisVersion: redisServerVersion(server),
      agents,
      rounds: ROUNDS,
      latencyMs: LATENCY_MS,
      redisMs,
      threadsMs,
      redisRuns,
      threadsRuns,
      idealMs: (ROUNDS + 1) * LATENCY_MS,
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
