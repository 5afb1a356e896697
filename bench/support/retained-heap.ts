/**
 * Main-thread heap a long-lived Supervisor keeps over several fan-outs: `rounds` fan-outs of
 * `agents` agents (the fanout.overhead workload: `noop` 8 times, then `complete_task`, 2 threads),
 * the handles dropped after each, then a full GC and `heapUsed`. With `--snapshot PREFIX` it also
 * writes a heap snapshot after the first and the last fan-out (compare them with
 * bench/support/heap-diff.ts `--per` the agents between them). Needs `--expose-gc`.
 *
 * `--retain N` sets `retainEndedAgents` (`Infinity` for every one). `--in-process K` then runs the
 * same `agents` K times in-process on the main thread, as fanout.overhead's baseline does beside
 * the Supervisor, and prints each run's CPU time and the GC time and count inside it.
 *
 * Run: node --expose-gc --import tsx bench/support/retained-heap.ts [--agents 1000] [--rounds 5] [--retain N] [--snapshot PREFIX]
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { writeHeapSnapshot } from 'node:v8';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import {
  assertCompleted,
  inProcessSimulated,
  NOOP_TOOL_MODULE,
  runInProcess,
  scratchDir,
  workerDefinition,
} from './workload.ts';

function flag(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? undefined : process.argv[at + 1];
}
const agents = Number(flag('agents') ?? 1000);
const rounds = Number(flag('rounds') ?? 5);
const snapshot = flag('snapshot');
const retain = flag('retain');
const inProcessRuns = Number(flag('in-process') ?? 0);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

function heapMb(): number {
  for (let i = 0; i < 3; i += 1) gc?.();
  return Math.round((process.memoryUsage().heapUsed / 2 ** 20) * 10) / 10;
}

const cwd = scratchDir('cwd');
const journals = scratchDir('journals');
const supervisor = new Supervisor({
  threads: 2,
  cwd: cwd.dir,
  compat: false,
  journalDir: path.join(journals.dir, 'supervisor'),
  definitions: [workerDefinition()],
  toolModules: [NOOP_TOOL_MODULE],
  providers: { simulated: { kind: 'simulated', options: { rounds: 8 } } },
  ...(retain === undefined ? {} : { retainEndedAgents: Number(retain) }),
});
try {
  await supervisor.start();
  const fanOut = async (count: number, offset: number): Promise<void> => {
    const handles = Array.from({ length: count }, (_, i) =>
      supervisor.spawn('bench-worker', { task: `Benchmark task ${offset + i}: call noop, then complete.` }),
    );
    assertCompleted(await Promise.all(handles.map((h) => h.result)), 'fan-out');
  };
  await fanOut(20, -20);
  const figures = [heapMb()];
  for (let r = 0; r < rounds; r += 1) {
    await fanOut(agents, r * agents);
    await new Promise((resolve) => setTimeout(resolve, 50));
    figures.push(heapMb());
    if (snapshot && (r === 0 || r === rounds - 1)) writeHeapSnapshot(`${snapshot}-${r}.heapsnapshot`);
  }
  const inProcess: { cpuMs: number; gcMs: number; gcs: number; majorGcs: number }[] = [];
  const gcs: { ms: number; major: boolean }[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const { detail } = entry as unknown as { detail?: { kind?: number } };
      const kind = detail?.kind;
      gcs.push({ ms: entry.duration, major: kind === constants.NODE_PERFORMANCE_GC_MAJOR });
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const provider = await inProcessSimulated({ rounds: 8 });
  const definition = workerDefinition();
  for (let r = 0; r < inProcessRuns; r += 1) {
    gcs.length = 0;
    const cpu = process.cpuUsage();
    const outcomes = await runInProcess({
      agents,
      definition,
      provider,
      task: (i) => `Benchmark task ${i}: call noop, then complete.`,
      cwd: cwd.dir,
      journalDir: path.join(journals.dir, `in-process-${r}`),
      fsync: supervisor.options.fsync,
    });
    const used = process.cpuUsage(cpu);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assertCompleted(outcomes, 'in-process');
    inProcess.push({
      cpuMs: Math.round((used.user + used.system) / 1000),
      gcMs: Math.round(gcs.reduce((sum, gc) => sum + gc.ms, 0)),
      gcs: gcs.length,
      majorGcs: gcs.filter((gc) => gc.major).length,
    });
  }
  observer.disconnect();
  const perAgentKb = (((figures.at(-1) ?? 0) - (figures[1] ?? 0)) * 1024) / (agents * (rounds - 1));
  console.log(
    JSON.stringify({
      heapMb: figures,
      agentCount: supervisor.agentCount,
      perAgentKb: Math.round(perAgentKb * 100) / 100,
      ...(inProcessRuns > 0 ? { inProcess } : {}),
      load: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]),
    }),
  );
} finally {
  await supervisor.close();
  cwd.remove();
  journals.remove();
}
