/**
 * `memory.waitingAgentBytes`: 5,000 agents parked in `wait_for_instruction` across 2 threads;
 * value = (heap + external of every actor-host thread) / 5,000, measured after a full GC in each
 * thread (`Supervisor.measureThreads()`). Target <= 32 KiB.
 *
 * GC: Node 20 rejects `--expose-gc` in a Worker's execArgv (ERR_WORKER_INVALID_EXEC_ARGV: V8 flags
 * are process-wide), and the host pool copies process.execArgv into every Worker's execArgv, so
 * neither `execArgv: ['--expose-gc']` nor `node --expose-gc` can start the supervisor. The flag is
 * therefore set at run time, before the threads start: their contexts then get `gc`, and the main
 * thread gets it from a fresh vm context.
 *
 * The agents run the built-in simulated model with `waits: 1` and a task that asks them to wait.
 * The same measurement of the empty hosts (started, nothing spawned yet) is the baseline: the
 * details report the net bytes per agent above it, and the supervisor's own per-agent bytes on the
 * main thread. Then every agent gets its instruction and
 * must complete, which proves they were really parked.
 *
 * Run: node --import tsx bench/memory.ts [--quick]
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Supervisor } from '../src/supervisor/supervisor.ts';
import { emitResult, isMain } from './support/child.ts';
import { type BenchOptions, type BenchOutput, round } from './support/figures.ts';
import { checked } from './support/targets.ts';
import { assertCompleted, scratchDir, waiterDefinition } from './support/workload.ts';

const THREADS = 2;
/** Lets the last wait requests reach the mailboxes after the last `waiting` event. */
const SETTLE_MS = 250;
const PROGRESS_MS = 10_000;

const FULL = { agents: 5000 };
const QUICK = { agents: 1000 };

interface ThreadsMemory {
  readonly heapUsed: number;
  readonly external: number;
  readonly total: number;
  readonly perThread: readonly {
    readonly heapUsed: number;
    readonly external: number;
    readonly agents: number;
  }[];
}

async function measureThreads(supervisor: Supervisor): Promise<ThreadsMemory> {
  // Two passes: the first GC can leave garbage that only the second finds (weak refs, finalizers).
  await supervisor.measureThreads();
  const stats = await supervisor.measureThreads();
  const heapUsed = stats.reduce((sum, s) => sum + s.heapUsed, 0);
  const external = stats.reduce((sum, s) => sum + s.external, 0);
  return {
    heapUsed,
    external,
    total: heapUsed + external,
    perThread: stats.map(({ heapUsed: h, external: e, agents }) => ({ heapUsed: h, external: e, agents })),
  };
}

/** Exposes `gc` to every context created from now on; returns the main thread's. */
function exposeGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

function mainThreadBytes(gc: () => void): number {
  gc();
  gc();
  const memory = process.memoryUsage();
  return memory.heapUsed + memory.external;
}

/** Runs the benchmark; see the module comment. */
export async function runMemoryBench(options: BenchOptions): Promise<BenchOutput> {
  const agents = (options.quick ? QUICK : FULL).agents;
  const cwd = scratchDir('cwd');
  const journals = scratchDir('journals');
  const supervisor = new Supervisor({
    threads: THREADS,
    cwd: cwd.dir,
    compat: false,
    journalDir: journals.dir,
    definitions: [waiterDefinition()],
    providers: { simulated: { kind: 'simulated', options: { waits: 1 } } },
  });
  const gc = exposeGc();
  try {
    await supervisor.start();
    const baseline = await measureThreads(supervisor);
    const mainBefore = mainThreadBytes(gc);

    const waiting = new Set<string>();
    const ended = new Set<string>();
    let crashes = 0;
    let restarts = 0;
    let settle: () => void = () => {};
    const parked = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const check = (): void => {
      if (waiting.size + ended.size >= agents) settle();
    };
    supervisor.on('agent:waiting', (event) => {
      waiting.add(event.agentId);
      check();
    });
    supervisor.on('agent:failed', (event) => {
      ended.add(event.agentId);
      check();
    });
    const crashCauses: string[] = [];
    supervisor.on('thread:crashed', (event) => {
      crashes += 1;
      crashCauses.push(`${event.cause.code ?? event.cause.name}: ${event.cause.message}`);
      process.stdout.write(
        `memory: thread ${event.hostId} crashed with ${event.agents.length} agents: ${crashCauses.at(-1)}\n`,
      );
    });
    supervisor.on('agent:restarted', () => {
      restarts += 1;
    });
    const start = performance.now();
    const progress = setInterval(() => {
      process.stdout.write(
        `memory: ${waiting.size} of ${agents} parked after ${Math.round(performance.now() - start)} ms (${crashes} thread crashes, ${restarts} restarts, ${ended.size} failed)\n`,
      );
    }, PROGRESS_MS);
    const handles = Array.from({ length: agents }, (_, i) =>
      supervisor.spawn('bench-waiter', { task: `Task ${i}: wait for an instruction, then report.` }),
    );
    await parked.finally(() => clearInterval(progress));
    if (ended.size > 0) {
      const first = (await Promise.all(handles.map((h) => h.result))).find((o) => o.status === 'failed');
      const why = first?.status === 'failed' ? `${first.reason}: ${first.error.message}` : '';
      throw new Error(`${ended.size} of ${agents} agents failed before parking (${why})`);
    }
    const parkMs = round(performance.now() - start, 1);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const loaded = await measureThreads(supervisor);
    const mainAfter = mainThreadBytes(gc);

    for (const handle of handles) handle.send('Report now.');
    assertCompleted(await Promise.all(handles.map((h) => h.result)), 'parked agents');

    const gross = loaded.total / agents;
    const net = (loaded.total - baseline.total) / agents;
    process.stdout.write(
      `memory: ${agents} parked agents: ${round(gross / 1024, 1)} KiB/agent gross, ${round(net / 1024, 1)} KiB/agent net\n`,
    );
    return {
      figures: {
        'memory.waitingAgentBytes': checked('memory.waitingAgentBytes', gross, 'bytes', 0),
      },
      details: {
        agents,
        threads: THREADS,
        netBytesPerAgent: round(net, 0),
        grossBytesPerAgent: round(gross, 0),
        heapBytesPerAgentNet: round((loaded.heapUsed - baseline.heapUsed) / agents, 0),
        externalBytesPerAgentNet: round((loaded.external - baseline.external) / agents, 0),
        emptyHostsBytes: baseline.total,
        parkedHostsBytes: loaded.total,
        baseline,
        parked: loaded,
        mainThreadBytesPerAgent: round((mainAfter - mainBefore) / agents, 0),
        parkMs,
        threadCrashes: crashes,
        crashCauses,
        agentRestarts: restarts,
      },
    };
  } finally {
    await supervisor.close();
    cwd.remove();
    journals.remove();
  }
}

if (isMain(import.meta.url)) {
  const result = await runMemoryBench({ quick: process.argv.includes('--quick') });
  console.log(JSON.stringify(result, null, 2));
  emitResult(result);
}
