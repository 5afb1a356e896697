/**
 * A steady-state run of the fan-out, latency or routing workload through the Supervisor, for CPU
 * profiles: starts 2 threads, warms up (fan-out and latency: 20 agents, then runs of N until the
 * CPU time per run stops falling, as the benchmarks do (warmup.ts); routing: one agent per lane),
 * runs N agents `reps` times and prints the window to cut with
 * `profile-summary --between` (the monotonic clock in µs, as V8 stamps profiles), with the CPU
 * time of the main thread and of the other threads (/proc) per agent or, for routing, per
 * instruction.
 *
 * node --import tsx --cpu-prof --cpu-prof-dir=DIR bench/support/steady-profile.ts fanout 1000 2
 * node --import tsx --cpu-prof --cpu-prof-dir=DIR bench/support/steady-profile.ts latency 2000 1
 * node --import tsx --cpu-prof --cpu-prof-dir=DIR bench/support/steady-profile.ts routing 10 1
 * node --import tsx bench/support/profile-summary.ts DIR --between FROM,TO
 *
 * routing N = agents per lane (2 lanes, WAITS_PER_AGENT instructions each, as bench/routing.ts).
 * It prints its pid first: the main thread's id, for bench/support/wake-placement.ts --waker.
 */
import type { ProviderConfig } from '../../src/protocol/messages.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { routingSupervisor, runLanes, type Stamps, WAITS_PER_AGENT } from '../routing.ts';
import { median } from './stats.ts';
import { cpuSince, threadCpu, totalCpu } from './thread-cpu.ts';
import { warmUntilSteady } from './warmup.ts';
import { assertCompleted, NOOP_TOOL_MODULE, scratchDir, workerDefinition } from './workload.ts';

type Mode = 'fanout' | 'latency' | 'routing';
const mode: Mode =
  process.argv[2] === 'latency' || process.argv[2] === 'routing' ? process.argv[2] : 'fanout';
const agents = Number(process.argv[3] ?? (mode === 'fanout' ? 1000 : mode === 'latency' ? 2000 : 10));
const reps = Number(process.argv[4] ?? (mode === 'routing' ? 1 : 2));
const ROUTING_LANES = 2;
const WARMUP_RUNS = { min: 2, max: 8 };
// The two benchmarks' workloads: 8 zero-latency rounds, or 5 requests of 100 ms under a limit of 500.
const provider: ProviderConfig =
  mode === 'fanout'
    ? { kind: 'simulated', options: { rounds: 8 } }
    : { kind: 'simulated', options: { rounds: 4, latency: 100 } };

const cwd = scratchDir('cwd');
const journals = scratchDir('journals');
const supervisor =
  mode === 'routing'
    ? routingSupervisor(cwd.dir, journals.dir)
    : new Supervisor({
        threads: 2,
        cwd: cwd.dir,
        compat: false,
        journalDir: journals.dir,
        definitions: [workerDefinition()],
        toolModules: [NOOP_TOOL_MODULE],
        providers: { simulated: provider },
        ...(mode === 'latency' ? { limits: { simulated: { concurrency: 500 } } } : {}),
      });
const fanOut = async (n: number): Promise<void> => {
  const handles = Array.from({ length: n }, (_, i) =>
    supervisor.spawn('bench-worker', { task: `Benchmark task ${i}: call noop, then complete.` }),
  );
  assertCompleted(await Promise.all(handles.map((h) => h.result)), `${mode} fan-out`);
};
/** Runs one repetition; returns what it did (agents, or instructions) and a summary line. */
const rep = async (): Promise<{ units: number; line: string }> => {
  if (mode !== 'routing') {
    await fanOut(agents);
    return { units: agents, line: `${mode} N=${agents}` };
  }
  const stamps: Stamps = { sent: new Map(), instructed: new Map() };
  const arrivals = await runLanes(supervisor, ROUTING_LANES, agents, stamps);
  for (const [text, arrivedNs] of arrivals) {
    const sentNs = stamps.sent.get(text);
    if (sentNs !== undefined) latencies.push(arrivedNs - sentNs);
  }
  return { units: arrivals.length, line: `routing ${ROUTING_LANES}x${agents}x${WAITS_PER_AGENT}` };
};
const latencies: number[] = [];
console.log(`pid ${process.pid}`);
try {
  await supervisor.start();
  if (mode === 'routing') await runLanes(supervisor, ROUTING_LANES, 1);
  else {
    await fanOut(20);
    // The benchmarks' rule: full-size runs until the CPU time per run stops falling.
    await warmUntilSteady(async () => {
      const cpu = process.cpuUsage();
      await fanOut(agents);
      const used = process.cpuUsage(cpu);
      return { cpuMs: (used.user + used.system) / 1000 };
    }, WARMUP_RUNS);
  }
  const from = process.hrtime.bigint() / 1000n;
  for (let r = 0; r < reps; r += 1) {
    latencies.length = 0;
    const cpu = process.cpuUsage();
    const threads = threadCpu();
    const start = performance.now();
    const { units, line } = await rep();
    const used = process.cpuUsage(cpu);
    const wall = (performance.now() - start).toFixed(0);
    const byThread = threads && cpuSince(threads, threadCpu() ?? threads);
    const per = (ms: number): string => ((ms * 1000) / units).toFixed(1);
    const main = byThread && byThread.main.userMs + byThread.main.systemMs;
    const all = byThread && totalCpu(byThread);
    const hosts = byThread && Object.values(byThread.hosts).map((c) => per(c.userMs + c.systemMs));
    const rest = byThread && byThread.other.userMs + byThread.other.systemMs;
    const split =
      main !== undefined && all !== undefined
        ? `, per ${mode === 'routing' ? 'instruction' : 'agent'}: main ${per(main)} µs, other threads ${per(all.userMs + all.systemMs - main)} µs` +
          (hosts && hosts.length > 0 && rest !== undefined
            ? ` (hosts ${hosts.join(' / ')}, rest ${per(rest)})`
            : '')
        : '';
    const p50 = latencies.length > 0 ? `, p50 ${(median(latencies) / 1000).toFixed(1)} µs` : '';
    console.log(
      `${line}: wall ${wall} ms, CPU ${((used.user + used.system) / 1000).toFixed(0)} ms${split}${p50}`,
    );
  }
  console.log(`window (--between): ${from},${process.hrtime.bigint() / 1000n}`);
} finally {
  await supervisor.close();
  cwd.remove();
  journals.remove();
}
