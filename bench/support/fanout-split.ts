/**
 * The workload of `fanout.overhead` (N agents x 8 `noop` rounds, simulated model, journals on),
 * run by the Supervisor on `threads` threads or, with `threads` 0, by the loop on the main thread
 * (the benchmark's in-process side), printing each run's wall time and CPU time by thread: the
 * main thread, each actor host, and every other thread (V8's compiler and GC helpers, libuv). This
 * is how `threads: 1`, `threads: 2` and the in-process baseline are compared on the same N, and
 * where the threads' extra CPU goes (bench/RESULTS.md, path25).
 *
 *   node --import tsx bench/support/fanout-split.ts [threads=2] [agents=1000] [reps=3] [--warmup=20,1000]
 *
 * Warm-up: untimed runs of 20 agents, then N (the default), or of the sizes `--warmup` lists:
 * `--warmup=20,100,250,500` is the sweep that precedes bench/fanout-overhead.ts's first timed run of
 * 1,000, `--warmup=20,1000,100,250,500` adds an untimed run of N before it. Journals go to
 * a fresh scratch directory; set TROUPE_BENCH_SCRATCH to a directory of your own to keep them away
 * from recent deletions (see SCRATCH_ROOT_ENV in child.ts), which otherwise dominate the creates.
 * With `--cpu-prof`, the window of the timed runs is printed for `profile-summary --between`.
 */
import path from 'node:path';
import { type CpuMs, cpuSince, threadCpu, totalCpu } from './thread-cpu.ts';
import {
  assertCompleted,
  fanoutSupervisor,
  inProcessSimulated,
  runInProcess,
  scratchDir,
  workerDefinition,
} from './workload.ts';

const ROUNDS = 8;
const positional = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const threads = Number(positional[0] ?? 2);
const agents = Number(positional[1] ?? 1000);
const reps = Number(positional[2] ?? 3);
const warmupArg = process.argv.find((arg) => arg.startsWith('--warmup='));
const warmup = warmupArg ? warmupArg.slice('--warmup='.length).split(',').map(Number) : [20, agents];

const cwd = scratchDir('split-cwd');
const journals = scratchDir('split-journals');
const definition = workerDefinition();
const task = (index: number): string => `Benchmark task ${index}: call noop, then complete.`;

const supervisor =
  threads > 0
    ? fanoutSupervisor({
        threads,
        cwd: cwd.dir,
        journalDir: path.join(journals.dir, 'supervisor'),
        definition,
        rounds: ROUNDS,
      })
    : undefined;
const provider = await inProcessSimulated({ rounds: ROUNDS });
let run = 0;

async function fan(n: number): Promise<void> {
  if (supervisor) {
    const handles = Array.from({ length: n }, (_, i) => supervisor.spawn('bench-worker', { task: task(i) }));
    assertCompleted(await Promise.all(handles.map((h) => h.result)), 'supervisor fan-out');
    return;
  }
  run += 1;
  const outcomes = await runInProcess({
    agents: n,
    definition,
    provider,
    task,
    cwd: cwd.dir,
    journalDir: path.join(journals.dir, `in-process-${run}`),
    fsync: 'never',
  });
  assertCompleted(outcomes, 'in-process fan-out');
}

const ms = (cpu: CpuMs): string => `${cpu.userMs}+${cpu.systemMs}`;

try {
  await supervisor?.start();
  for (const n of warmup) await fan(n);
  console.log(`warm-up done: ${warmup.join(', ')} agents`);
  const from = process.hrtime.bigint() / 1000n;
  for (let rep = 0; rep < reps; rep += 1) {
    const before = threadCpu();
    const start = performance.now();
    await fan(agents);
    const wallMs = performance.now() - start;
    const after = threadCpu();
    if (!before || !after) throw new Error('Per-thread CPU needs /proc/self/task (Linux)');
    const used = cpuSince(before, after);
    const total = totalCpu(used);
    const hosts = Object.values(used.hosts).map(ms).join(' ');
    console.log(
      `${threads > 0 ? `threads=${threads}` : 'in-process'} N=${agents}: wall ${wallMs.toFixed(0)} ms, ` +
        `CPU ${total.userMs + total.systemMs} ms (user+system): main ${ms(used.main)}` +
        `${hosts ? `, hosts ${hosts}` : ''}, other ${ms(used.other)}`,
    );
  }
  console.log(`window (--between): ${from},${process.hrtime.bigint() / 1000n}`);
} finally {
  await supervisor?.close();
  cwd.remove();
  journals.remove();
}
