/**
 * A steady-state run of the fan-out or latency workload through the Supervisor, for CPU profiles:
 * starts 2 threads, warms up with 20 then 200 agents, runs N agents `reps` times and prints the
 * window to cut with `profile-summary --between` (the monotonic clock in µs, as V8 stamps profiles).
 *
 * node --import tsx --cpu-prof --cpu-prof-dir=DIR bench/support/steady-profile.ts fanout 1000 2
 * node --import tsx --cpu-prof --cpu-prof-dir=DIR bench/support/steady-profile.ts latency 2000 1
 * node --import tsx bench/support/profile-summary.ts DIR --between FROM,TO
 */
import type { ProviderConfig } from '../../src/protocol/messages.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { assertCompleted, NOOP_TOOL_MODULE, scratchDir, workerDefinition } from './workload.ts';

const mode = process.argv[2] === 'latency' ? 'latency' : 'fanout';
const agents = Number(process.argv[3] ?? (mode === 'fanout' ? 1000 : 2000));
const reps = Number(process.argv[4] ?? 2);
// The two benchmarks' workloads: 8 zero-latency rounds, or 5 requests of 100 ms under a limit of 500.
const provider: ProviderConfig =
  mode === 'fanout'
    ? { kind: 'simulated', options: { rounds: 8 } }
    : { kind: 'simulated', options: { rounds: 4, latency: 100 } };

const cwd = scratchDir('cwd');
const journals = scratchDir('journals');
const supervisor = new Supervisor({
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
try {
  await supervisor.start();
  await fanOut(20);
  await fanOut(200);
  const from = process.hrtime.bigint() / 1000n;
  for (let rep = 0; rep < reps; rep += 1) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    await fanOut(agents);
    const used = process.cpuUsage(cpu);
    const wall = (performance.now() - start).toFixed(0);
    console.log(
      `${mode} N=${agents}: wall ${wall} ms, CPU ${((used.user + used.system) / 1000).toFixed(0)} ms`,
    );
  }
  console.log(`window (--between): ${from},${process.hrtime.bigint() / 1000n}`);
} finally {
  await supervisor.close();
  cwd.remove();
  journals.remove();
}
