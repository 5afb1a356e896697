/**
 * `routing.instructionP50Us` / `routing.instructionP99Us`: from the supervisor's `send()` to the
 * parked agent's `wait_for_instruction` result being in its loop, over 20,000 instructions.
 * Target p50 <= 150 us.
 *
 * The end point is stamped without any hook in src/: the agent's model is a provider module
 * (bench/fixtures/bench-models.ts, routing model) that stamps each instruction when the loop hands
 * the `wait_for_instruction` result back to it, i.e. once the host got the instruction, the tool
 * returned, the loop journalled Instructed and ToolResult, added the result to the projection and
 * journalled the next request (InferenceSubmitted, with the hash of its input).
 * Both ends read `process.hrtime` (the monotonic clock every thread of a process shares), and the
 * stamps come back in the agent's `complete_task` result.
 *
 * Lanes: LANES agents are in flight at once (one per thread: placement is least-loaded), each
 * parked in turn: on its `waiting` event the lane waits PARK_SETTLE_MS (so the wait request has
 * surely reached the supervisor's mailbox: the agent is parked, not about to park) and sends the
 * next instruction. A full run repeats the measurement with LOADED_LANES lanes (several agents per
 * thread working at once) as a detail, and reports the round trip send() -> `instructed` event
 * back on the supervisor.
 *
 * Run: node --import tsx bench/routing.ts [--quick]
 */
import path from 'node:path';
import { HARD_MAX_STEPS } from '../src/constants.ts';
import { JournalWriter } from '../src/journal/writer.ts';
import type { AgentOutcome } from '../src/loop/types.ts';
import { Supervisor } from '../src/supervisor/supervisor.ts';
import { monotonicNs, type RoutingResult } from './fixtures/bench-models.ts';
import { emitResult, isMain } from './support/child.ts';
import { type BenchOptions, type BenchOutput, round, untargeted } from './support/figures.ts';
import { mean, median, quantile } from './support/stats.ts';
import { checked } from './support/targets.ts';
import { BENCH_MODELS_MODULE, scratchDir, waiterDefinition } from './support/workload.ts';

const THREADS = 2;
const LANES = 2;
const LOADED_LANES = 8;
/**
 * Instructions per agent: keeps each agent's projection small (it grows by two entries a wait),
 * and its model requests (one per wait, plus the last) within HARD_MAX_STEPS.
 */
export const WAITS_PER_AGENT = 200;
const PARK_SETTLE_MS = 1;
const JOURNAL_APPENDS = { full: 2000, quick: 500 } as const;

interface Params {
  /** Agents each lane runs one after another (LANES x agentsPerLane x WAITS_PER_AGENT instructions). */
  readonly agentsPerLane: number;
  /** The same with LOADED_LANES lanes; 0 skips it. */
  readonly loadedAgentsPerLane: number;
}

const FULL: Params = { agentsPerLane: 50, loadedAgentsPerLane: 6 };
const QUICK: Params = { agentsPerLane: 1, loadedAgentsPerLane: 0 };

export interface Stamps {
  readonly sent: Map<string, number>;
  readonly instructed: Map<string, number>;
}

/** Runs one agent through WAITS_PER_AGENT instructions; resolves its outcome. */
function runAgent(supervisor: Supervisor, name: string, stamps: Stamps): Promise<AgentOutcome> {
  // Every wait is a model request: the agent needs more than the default 32 steps, and the
  // benchmark measures routing, not budgets.
  const handle = supervisor.spawn('bench-waiter', {
    task: `Wait for instructions (${name}).`,
    limits: { maxSteps: HARD_MAX_STEPS, maxTotalTokens: 0 },
  });
  let next = 0;
  handle.on('waiting', () => {
    if (next >= WAITS_PER_AGENT) return;
    const text = `${name}/${next}`;
    next += 1;
    setTimeout(() => {
      stamps.sent.set(text, monotonicNs());
      handle.send(text);
    }, PARK_SETTLE_MS);
  });
  handle.on('instructed', (event) => stamps.instructed.set(event.text, monotonicNs()));
  return handle.result;
}

/**
 * Runs `lanes` lanes of `agentsPerLane` agents each, one after another per lane; resolves every
 * instruction's arrival stamp (also used by bench/support/steady-profile.ts).
 */
export async function runLanes(
  supervisor: Supervisor,
  lanes: number,
  agentsPerLane: number,
  stamps: Stamps = { sent: new Map(), instructed: new Map() },
): Promise<(readonly [string, number])[]> {
  const arrivals: (readonly [string, number])[] = [];
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      for (let agent = 0; agent < agentsPerLane; agent += 1) {
        const outcome = await runAgent(supervisor, `${lane}.${agent}`, stamps);
        if (outcome.status !== 'completed') {
          throw new Error(
            `routing agent ${lane}.${agent} failed: ${outcome.reason}: ${outcome.error.message}`,
          );
        }
        arrivals.push(...(outcome.result as RoutingResult).arrivals);
      }
    }),
  );
  return arrivals;
}

/** Latency figures of one measurement. */
interface Measurement {
  readonly lanes: number;
  readonly instructions: number;
  readonly p50Us: number;
  readonly p90Us: number;
  readonly p99Us: number;
  readonly p999Us: number;
  readonly meanUs: number;
  readonly minUs: number;
  readonly maxUs: number;
  readonly roundTripP50Us: number;
  readonly roundTripP99Us: number;
  readonly wallMs: number;
  readonly cpuMs: number;
}

async function measure(supervisor: Supervisor, lanes: number, agentsPerLane: number): Promise<Measurement> {
  const stamps: Stamps = { sent: new Map(), instructed: new Map() };
  const cpu = process.cpuUsage();
  const start = performance.now();
  const arrivals = await runLanes(supervisor, lanes, agentsPerLane, stamps);
  const wallMs = performance.now() - start;
  const used = process.cpuUsage(cpu);
  const latencies: number[] = [];
  for (const [text, arrivedNs] of arrivals) {
    const sentNs = stamps.sent.get(text);
    if (sentNs === undefined) throw new Error(`instruction ${text} arrived but was never sent`);
    latencies.push((arrivedNs - sentNs) / 1000);
  }
  const roundTrips: number[] = [];
  for (const [text, backNs] of stamps.instructed) {
    const sentNs = stamps.sent.get(text);
    if (sentNs !== undefined) roundTrips.push((backNs - sentNs) / 1000);
  }
  const expected = lanes * agentsPerLane * WAITS_PER_AGENT;
  if (latencies.length !== expected) {
    throw new Error(`expected ${expected} instruction arrivals, got ${latencies.length}`);
  }
  const q = (samples: readonly number[], at: number): number => round(quantile(samples, at), 1);
  const result: Measurement = {
    lanes,
    instructions: latencies.length,
    p50Us: q(latencies, 0.5),
    p90Us: q(latencies, 0.9),
    p99Us: q(latencies, 0.99),
    p999Us: q(latencies, 0.999),
    meanUs: round(mean(latencies), 1),
    minUs: round(Math.min(...latencies), 1),
    maxUs: round(Math.max(...latencies), 1),
    roundTripP50Us: q(roundTrips, 0.5),
    roundTripP99Us: q(roundTrips, 0.99),
    wallMs: round(wallMs, 1),
    cpuMs: round((used.user + used.system) / 1000, 1),
  };
  process.stdout.write(
    `routing (${lanes} lanes): ${result.instructions} instructions, p50 ${result.p50Us} us, p99 ${result.p99Us} us\n`,
  );
  return result;
}

/**
 * µs per journal append of the two events the measured path writes (Instructed, ToolResult), with
 * the supervisor's fsync policy: the loop writes both synchronously before the result reaches the
 * model. Median of three batches, measured on this thread before the threads start.
 */
function journalAppendUs(dir: string, fsync: 'always' | 'interval' | 'never', appends: number): number {
  const batches: number[] = [];
  const writer = JournalWriter.open(path.join(dir, 'append-bench.jsonl'), { fsync });
  try {
    for (let batch = 0; batch < 3; batch += 1) {
      const start = performance.now();
      for (let i = 0; i < appends; i += 1) {
        const callId = `bench_${batch}_${i}`;
        writer.append({ type: 'Instructed', agentId: 'bench', index: i, text: `0.0/${i}`, callId });
        writer.append({
          type: 'ToolResult',
          agentId: 'bench',
          round: 1,
          callId,
          name: 'wait_for_instruction',
          ok: true,
          projectionAccepted: true,
          text: `Instruction: 0.0/${i}`,
          stateUpdates: [],
          displayedStateKeys: [],
        });
      }
      batches.push(((performance.now() - start) * 1000) / (2 * appends));
    }
  } finally {
    writer.close();
  }
  return round(median(batches), 1);
}

/** The benchmark's Supervisor: THREADS threads, the waiter agent on the routing model. */
export function routingSupervisor(cwd: string, journalDir: string): Supervisor {
  return new Supervisor({
    threads: THREADS,
    cwd,
    compat: false,
    journalDir,
    definitions: [waiterDefinition()],
    providers: {
      bench: {
        kind: 'module',
        module: BENCH_MODELS_MODULE,
        export: 'createRoutingModel',
        options: { waits: WAITS_PER_AGENT },
      },
    },
  });
}

/** Runs the benchmark; see the module comment. */
export async function runRoutingBench(options: BenchOptions): Promise<BenchOutput> {
  const params = options.quick ? QUICK : FULL;
  const cwd = scratchDir('cwd');
  const journals = scratchDir('journals');
  const supervisor = routingSupervisor(cwd.dir, journals.dir);
  try {
    const appendUs = journalAppendUs(
      journals.dir,
      supervisor.options.fsync,
      options.quick ? JOURNAL_APPENDS.quick : JOURNAL_APPENDS.full,
    );
    await supervisor.start();
    await runLanes(supervisor, 1, 1, { sent: new Map(), instructed: new Map() });
    const main = await measure(supervisor, LANES, params.agentsPerLane);
    const loaded =
      params.loadedAgentsPerLane > 0
        ? await measure(supervisor, LOADED_LANES, params.loadedAgentsPerLane)
        : undefined;
    return {
      figures: {
        'routing.instructionP50Us': checked('routing.instructionP50Us', main.p50Us, 'us', 1),
        'routing.instructionP99Us': untargeted(main.p99Us, 'us', 1),
      },
      details: {
        threads: THREADS,
        waitsPerAgent: WAITS_PER_AGENT,
        parkSettleMs: PARK_SETTLE_MS,
        endpoint: 'wait_for_instruction result handed back to the model by the loop (worker thread)',
        roundTripEndpoint: "send() -> 'instructed' event back on the supervisor (main thread)",
        journalAppendUs: appendUs,
        ...main,
        loaded: loaded ?? null,
      },
    };
  } finally {
    await supervisor.close();
    cwd.remove();
    journals.remove();
  }
}

if (isMain(import.meta.url)) {
  const result = await runRoutingBench({ quick: process.argv.includes('--quick') });
  console.log(JSON.stringify(result, null, 2));
  emitResult(result);
}
