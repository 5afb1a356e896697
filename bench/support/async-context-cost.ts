/**
 * What an AsyncLocalStorage context costs the agent loop on this Node: the in-process 1,000 x 8
 * workload (workload.ts, no journal), run alternately outside and inside a context,
 * CPU time of each run, five of each after four warm-up runs. On Node 20 an active context
 * installs a promise hook for the whole thread (bench/RESULTS.md, session 22: 10-33% more CPU),
 * which is why a redis worker thread runs without one while a single supervisor uses it
 * (src/engines/redis/secret-forwarder.ts).
 *
 * Run: node --import tsx bench/support/async-context-cost.ts
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inProcessSimulated, runInProcess, workerDefinition } from './workload.ts';

const RUNS = 14;
const WARM_UP = 4;

const definition = workerDefinition();
const provider = await inProcessSimulated({ rounds: 8 });
const cwd = mkdtempSync(path.join(tmpdir(), 'troupe-async-context-'));
const task = (index: number): string => `Benchmark task ${index}: call noop, then complete.`;
const once = () =>
  runInProcess({ agents: 1000, definition, provider, task, cwd, journalDir: undefined, fsync: 'never' });
const context = new AsyncLocalStorage<{ readonly run: number }>();
const cpuMs: Record<'outside' | 'inside', number[]> = { outside: [], inside: [] };
try {
  for (let run = 0; run < RUNS; run++) {
    const side = run % 2 === 0 ? 'outside' : 'inside';
    const before = process.cpuUsage();
    if (side === 'inside') {
      await context.run({ run }, once);
      context.disable();
    } else await once();
    const used = process.cpuUsage(before);
    if (run >= WARM_UP) cpuMs[side].push((used.user + used.system) / 1000);
  }
} finally {
  rmSync(cwd, { recursive: true, force: true });
}
for (const side of ['outside', 'inside'] as const) {
  const sorted = [...cpuMs[side]].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  console.log(`${side} a context: CPU min ${sorted[0]?.toFixed(0)} ms, median ${median.toFixed(0)} ms`);
}
