/**
 * The host's half of the routing path, on one thread: a waiter agent runs in-process with the
 * routing model, and each instruction is handed to its `wait_for_instruction` from a fresh
 * macrotask (as a port message would be), stamped just before. The time from that stamp to the
 * model's stamp is what an actor host spends between an instruction's arrival and the next
 * request (journal, tool result, projection, request hash, commit), without the thread hop or
 * any other thread. Also reports CPU per instruction of the whole cycle (park included).
 *
 * By default each instruction follows the park at once (the path hot). `--idle-ms=N` answers it N
 * ms after the park instead, as the routing benchmark's lanes do (1 ms): the thread sleeps in
 * between, and the path then runs from cold caches after a wake-up (bench/RESULTS.md, session 8).
 *
 * `--windows=FILE` writes each measured instruction's [arrival, request] in µs of the monotonic
 * clock (JSON pairs), for `profile-summary.ts --windows FILE` to keep only the samples a
 * `--cpu-prof` run took inside them: where the path's own time goes, cold or hot, without the park
 * and the usage estimate around it.
 *
 * node --import tsx bench/support/path-cpu.ts [agents=20] [--idle-ms=N] [--windows=FILE]
 */

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { HARD_MAX_STEPS } from '../../src/constants.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { createRoutingModel, monotonicNs, type RoutingResult } from '../fixtures/bench-models.ts';
import { WAITS_PER_AGENT } from '../routing.ts';
import { median, quantile } from './stats.ts';
import { cpuSince, threadCpu } from './thread-cpu.ts';
import { scratchDir, waiterDefinition } from './workload.ts';

const positional = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const agents = Number(positional[0] ?? 20);
const idleArg = process.argv.find((arg) => arg.startsWith('--idle-ms='));
const idleMs = idleArg === undefined ? undefined : Number(idleArg.slice('--idle-ms='.length));
if (idleMs !== undefined && !(idleMs >= 0))
  throw new Error(`--idle-ms: expected a number of ms, got ${idleArg}`);
const windowsFile = process.argv.find((arg) => arg.startsWith('--windows='))?.slice('--windows='.length);
const journals = scratchDir('path-journals');
const cwd = scratchDir('path-cwd');
const provider = createRoutingModel({ waits: WAITS_PER_AGENT });
const registry = createToolRegistry([]);
const promptCache = new Map<string, Promise<string>>();
const definition = waiterDefinition();
// A port message is what wakes a host: the instruction is answered from one here too.
const { port1, port2 } = new MessageChannel();
let pending: ((text: string) => void) | undefined;
const sent = new Map<string, number>();
port2.on('message', (text: string) => {
  const resolve = pending;
  pending = undefined;
  sent.set(text, monotonicNs());
  resolve?.(text);
});

async function one(index: number): Promise<[string, number][]> {
  const agentId = `path-${index}`;
  const journal = JournalWriter.open(path.join(journals.dir, `${agentId}.jsonl`), {
    fsync: 'never',
    batch: true,
  });
  let n = 0;
  try {
    const outcome = await runAgent({
      agentId,
      definition,
      task: `Wait for instructions (${agentId}).`,
      provider,
      model: 'default',
      registry,
      cwd: cwd.dir,
      journal,
      promptCache,
      limits: { maxSteps: HARD_MAX_STEPS, maxTotalTokens: 0 },
      channels: {
        waitForInstruction: () =>
          new Promise<string | null>((resolve) => {
            pending = resolve;
            // After the park's own turn, like the supervisor's answer (or after idleMs).
            const answer = (): void => port1.postMessage(`${index}/${n++}`);
            if (idleMs === undefined) setImmediate(answer);
            else setTimeout(answer, idleMs);
          }),
      },
    });
    if (outcome.status !== 'completed') throw new Error(`agent ${agentId}: ${outcome.status}`);
    return (outcome.result as RoutingResult).arrivals.map(([t, at]) => [t, at]);
  } finally {
    journal.close();
  }
}

try {
  await one(-1);
  await one(-2);
  const cpu = process.cpuUsage();
  const thread = threadCpu();
  const start = performance.now();
  const latencies: number[] = [];
  const windows: [fromUs: number, toUs: number][] = [];
  for (let i = 0; i < agents; i += 1) {
    for (const [text, at] of await one(i)) {
      const from = sent.get(text);
      if (from === undefined) continue;
      latencies.push((at - from) / 1000);
      windows.push([from / 1000, at / 1000]);
    }
  }
  if (windowsFile !== undefined) writeFileSync(windowsFile, JSON.stringify(windows));
  const used = process.cpuUsage(cpu);
  const per = ((used.user + used.system) / latencies.length).toFixed(1);
  const after = threadCpu();
  const main = thread && after ? cpuSince(thread, after).main : undefined;
  const mainPer =
    main === undefined
      ? ''
      : `, this thread ${(((main.userMs + main.systemMs) * 1000) / latencies.length).toFixed(1)} µs`;
  const q = (at: number): string => quantile(latencies, at).toFixed(1);
  console.log(
    `path ${latencies.length} instructions${idleMs === undefined ? '' : ` (${idleMs} ms idle before each)`}: arrival -> request p10 ${q(0.1)} p50 ${median(latencies).toFixed(1)} p90 ${q(0.9)} µs; cycle CPU ${per} µs/instruction${mainPer}, wall ${(performance.now() - start).toFixed(0)} ms`,
  );
} finally {
  port1.close();
  journals.remove();
  cwd.remove();
}
