/**
 * `peer.openaiAgentsRatio` and `peer.langgraphRatio`: the same workload, N agents x R tool rounds
 * against a scripted model with zero latency, run by troupe, by the OpenAI Agents SDK's Runner
 * (`@openai/agents-core`, a scripted Model implementing its Model interface) and by LangGraph.js
 * (`@langchain/langgraph`: the ReAct graph of its documentation, a model node and a prebuilt
 * `ToolNode` joined by `toolsCondition`, over a scripted `@langchain/core` `BaseChatModel`), in the
 * same process. value = troupe wall time / peer wall time; target <= 0.2 for the OpenAI Agents
 * SDK, none for LangGraph.js.
 *
 * Workload, every side: R calls to a `noop` tool (answers `ok`), then a text answer; all N agents
 * started at once and awaited together. The models do nothing but count the tool results they see
 * (bench/fixtures/peer-model.ts, bench/fixtures/langgraph-model.ts and the counting model in
 * bench/fixtures/bench-models.ts). Every side's answers are checked: a peer run counts only if
 * every agent answered `done after R tool results` (and, for LangGraph.js, its message list holds
 * exactly R tool results).
 *
 * troupe runs twice: the headline is the Supervisor (2 worker threads, threads started before
 * timing, every agent journalled to disk with the default fsync policy, since that is what users
 * run); the detail `inProcessRatio` is the same loop on the main thread with no journal, like the
 * peers, which keep their run state in memory. The OpenAI Agents SDK runs with tracing disabled (no
 * exporter); LangGraph.js with no checkpointer and no callbacks (LangSmith tracing is off unless
 * its environment variables turn it on, and the benchmark clears them).
 *
 * Run: node --import tsx bench/peer.ts [--quick]
 */
import { Agent, Runner, tool } from '@openai/agents-core';
import { z } from 'zod';
import { Supervisor } from '../src/supervisor/supervisor.ts';
import { createCountingModel } from './fixtures/bench-models.ts';
import { langgraphAgents, unfinishedLangGraphRuns } from './fixtures/langgraph-model.ts';
import { CountingPeerModel } from './fixtures/peer-model.ts';
import { emitResult, isMain } from './support/child.ts';
import { type BenchOptions, type BenchOutput, round } from './support/figures.ts';
import { median } from './support/stats.ts';
import { checked } from './support/targets.ts';
import { type WarmupRuns, warmUntilSteady } from './support/warmup.ts';
import {
  assertCompleted,
  BENCH_MODELS_MODULE,
  NOOP_TOOL_MODULE,
  peerDefinition,
  runInProcess,
  scratchDir,
} from './support/workload.ts';

const ROUNDS = 8;
const THREADS = 2;
const WARMUP_AGENTS = 20;
/** The package and version measured (a pinned devDependency). */
export const PEER = '@openai/agents-core@0.20.0';
/** The LangGraph.js packages and versions measured (pinned devDependencies). */
export const LANGGRAPH = '@langchain/langgraph@1.7.3 with @langchain/core@1.4.0';

interface Params {
  readonly agents: number;
  readonly reps: number;
  /** Untimed full-size runs per side before the timed ones (support/warmup.ts). */
  readonly warmup: WarmupRuns;
}

const FULL: Params = { agents: 1000, reps: 3, warmup: { min: 2, max: 10 } };
const QUICK: Params = { agents: 100, reps: 1, warmup: { min: 1, max: 1 } };

interface Sample {
  readonly wallMs: number;
  readonly cpuMs: number;
}

async function timed(work: () => Promise<void>): Promise<Sample> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  await work();
  const wallMs = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { wallMs: round(wallMs, 1), cpuMs: round((used.user + used.system) / 1000, 1) };
}

const task = (index: number): string => `Benchmark task ${index}: call noop ${ROUNDS} times, then answer.`;

const EXPECTED_ANSWER = `done after ${ROUNDS} tool results`;

function peerSide(): (agents: number) => Promise<Sample> {
  const noop = tool({
    name: 'noop',
    description: 'Does nothing and answers `ok`.',
    parameters: z.object({}),
    execute: async () => 'ok',
  });
  const agent = new Agent({
    name: 'bench-peer',
    instructions: 'You are a benchmark agent. Call the noop tool when asked, then answer with a short text.',
    model: new CountingPeerModel(ROUNDS),
    tools: [noop],
  });
  const runner = new Runner({ tracingDisabled: true });
  return (agents) =>
    timed(async () => {
      const results = await Promise.all(
        Array.from({ length: agents }, (_, i) => runner.run(agent, task(i), { maxTurns: ROUNDS + 2 })),
      );
      const wrong = results.filter((r) => r.finalOutput !== EXPECTED_ANSWER).length;
      if (wrong > 0) throw new Error(`peer: ${wrong} of ${agents} runs did not finish the script`);
    });
}

function langgraphSide(): (agents: number) => Promise<Sample> {
  const run = langgraphAgents(ROUNDS);
  return (agents) =>
    timed(async () => {
      const wrong = unfinishedLangGraphRuns(await run(agents), ROUNDS);
      if (wrong > 0) throw new Error(`langgraph: ${wrong} of ${agents} runs did not finish the script`);
    });
}

/** Runs the benchmark; see the module comment. */
export async function runPeerBench(options: BenchOptions): Promise<BenchOutput> {
  const params = options.quick ? QUICK : FULL;
  const definition = peerDefinition();
  const cwd = scratchDir('cwd');
  const journals = scratchDir('journals');
  const supervisor = new Supervisor({
    threads: THREADS,
    cwd: cwd.dir,
    compat: false,
    journalDir: journals.dir,
    definitions: [definition],
    toolModules: [NOOP_TOOL_MODULE],
    providers: {
      bench: {
        kind: 'module',
        module: BENCH_MODELS_MODULE,
        export: 'createCountingModel',
        options: { rounds: ROUNDS },
      },
    },
  });
  const peer = peerSide();
  const langgraph = langgraphSide();
  const viaSupervisor = (agents: number): Promise<Sample> =>
    timed(async () => {
      const handles = Array.from({ length: agents }, (_, i) =>
        supervisor.spawn('bench-peer', { task: task(i) }),
      );
      assertCompleted(await Promise.all(handles.map((h) => h.result)), 'troupe supervisor');
    });
  const model = createCountingModel({ rounds: ROUNDS });
  const inProcess = (agents: number): Promise<Sample> =>
    timed(async () => {
      const outcomes = await runInProcess({
        agents,
        definition,
        provider: model,
        task,
        cwd: cwd.dir,
        journalDir: undefined,
        fsync: 'never',
      });
      assertCompleted(outcomes, 'troupe in-process');
    });

  try {
    await supervisor.start();
    await peer(WARMUP_AGENTS);
    await langgraph(WARMUP_AGENTS);
    await viaSupervisor(WARMUP_AGENTS);
    await inProcess(WARMUP_AGENTS);
    // Untimed runs of the full N per side until it stops getting faster, as fanout-overhead and
    // scaleout do (support/warmup.ts): every isolate compiles the hot code for itself, and the
    // Supervisor's main thread and two hosts (each seeing half the agents) were still compiling
    // in the first timed runs (bench/RESULTS.md). Every side gets the same rule; its runs are in
    // the details.
    const warmup = {
      peer: await warmUntilSteady(() => peer(params.agents), params.warmup),
      langgraph: await warmUntilSteady(() => langgraph(params.agents), params.warmup),
      supervisor: await warmUntilSteady(() => viaSupervisor(params.agents), params.warmup),
      inProcess: await warmUntilSteady(() => inProcess(params.agents), params.warmup),
    };
    const walls = (samples: readonly Sample[]): string => samples.map((s) => s.wallMs).join(', ');
    process.stdout.write(
      `peer N=${params.agents} (warm-up): openai-agents ${walls(warmup.peer)} ms, langgraph ${walls(warmup.langgraph)} ms, supervisor ${walls(warmup.supervisor)} ms, in-process ${walls(warmup.inProcess)} ms\n`,
    );
    const peerRuns: Sample[] = [];
    const langgraphRuns: Sample[] = [];
    const supervisorRuns: Sample[] = [];
    const inProcessRuns: Sample[] = [];
    for (let rep = 0; rep < params.reps; rep += 1) {
      const order = [
        () => peer(params.agents).then((s) => peerRuns.push(s)),
        () => langgraph(params.agents).then((s) => langgraphRuns.push(s)),
        () => viaSupervisor(params.agents).then((s) => supervisorRuns.push(s)),
        () => inProcess(params.agents).then((s) => inProcessRuns.push(s)),
      ];
      // Rotate the order each repetition so drift in machine load falls on every side.
      for (let i = 0; i < order.length; i += 1) await order[(i + rep) % order.length]?.();
      process.stdout.write(
        `peer N=${params.agents}: openai-agents ${peerRuns.at(-1)?.wallMs} ms, langgraph ${langgraphRuns.at(-1)?.wallMs} ms, supervisor ${supervisorRuns.at(-1)?.wallMs} ms, in-process ${inProcessRuns.at(-1)?.wallMs} ms\n`,
      );
    }
    const wall = (samples: readonly Sample[]): number => median(samples.map((s) => s.wallMs));
    const cpu = (samples: readonly Sample[]): number => median(samples.map((s) => s.cpuMs));
    const best = (samples: readonly Sample[]): number => Math.min(...samples.map((s) => s.wallMs));
    const peerMs = wall(peerRuns);
    const langgraphMs = wall(langgraphRuns);
    return {
      figures: {
        'peer.openaiAgentsRatio': checked(
          'peer.openaiAgentsRatio',
          wall(supervisorRuns) / peerMs,
          'ratio',
          3,
        ),
        'peer.langgraphRatio': checked('peer.langgraphRatio', wall(supervisorRuns) / langgraphMs, 'ratio', 3),
      },
      details: {
        peer: PEER,
        langgraph: LANGGRAPH,
        agents: params.agents,
        rounds: ROUNDS,
        threads: THREADS,
        reps: params.reps,
        peerMs,
        supervisorMs: wall(supervisorRuns),
        inProcessMs: wall(inProcessRuns),
        langgraphMs,
        inProcessRatio: round(wall(inProcessRuns) / peerMs, 3),
        inProcessLanggraphRatio: round(wall(inProcessRuns) / langgraphMs, 3),
        langgraphCpuMs: cpu(langgraphRuns),
        langgraphCpuRatio: round(cpu(supervisorRuns) / cpu(langgraphRuns), 3),
        langgraphBestRatio: round(best(supervisorRuns) / best(langgraphRuns), 3),
        peerCpuMs: cpu(peerRuns),
        supervisorCpuMs: cpu(supervisorRuns),
        inProcessCpuMs: cpu(inProcessRuns),
        cpuRatio: round(cpu(supervisorRuns) / cpu(peerRuns), 3),
        /** Fastest run of each side: other load on the machine only ever adds time. */
        bestRatio: round(best(supervisorRuns) / best(peerRuns), 3),
        inProcessCpuRatio: round(cpu(inProcessRuns) / cpu(peerRuns), 3),
        /** The untimed full-size runs of each side before timing, in order (support/warmup.ts). */
        warmup,
        peerRuns,
        langgraphRuns,
        supervisorRuns,
        inProcessRuns,
      },
    };
  } finally {
    await supervisor.close();
    cwd.remove();
    journals.remove();
  }
}

if (isMain(import.meta.url)) {
  const result = await runPeerBench({ quick: process.argv.includes('--quick') });
  console.log(JSON.stringify(result, null, 2));
  emitResult(result);
}
