/**
 * What the benchmarks run: one agent definition per workload, the provider and tool modules the
 * threads import, and the in-process runner that is the baseline (same definition, same provider
 * options, same loop, same journals, on the main thread).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseDefinition } from '../../src/definition/load.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import type { AgentOutcome } from '../../src/loop/types.ts';
import type { SimulatedProviderOptions } from '../../src/providers/simulated.ts';
import type { Provider } from '../../src/providers/types.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
// @ts-expect-error: a plain ESM module of the checkout, without declarations
import { bundleModule } from '../../workers/dev-bundle.mjs';
import { SCRATCH_ROOT_ENV } from './child.ts';

const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));

/** Tool module with the `noop` tool (`toolModules` entry). */
export const NOOP_TOOL_MODULE = { module: fixture('noop-tool.ts'), export: 'noopTool' } as const;
/** Provider module: the counting and routing models. */
export const BENCH_MODELS_MODULE = fixture('bench-models.ts');

function definition(text: string, name: string): AgentDefinition {
  const loaded = parseDefinition(text, `bench:${name}`, { source: 'builtin' });
  if (!loaded.definition) {
    const problems = loaded.errors.map((problem) => problem.message).join('; ');
    throw new Error(`The benchmark definition ${name} does not load: ${problems}`);
  }
  return loaded.definition;
}

/**
 * The fan-out agent: calls `noop` for its rounds, then `complete_task`. AGENTS.md is off so every
 * run assembles the same prompt wherever it starts.
 */
export function workerDefinition(): AgentDefinition {
  return definition(
    `---
name: bench-worker
description: Benchmark agent that calls noop for its rounds and then complete_task.
tools: [noop, complete_task]
agentsMd: false
---
You are a benchmark agent. Call the noop tool when asked, then deliver your result with complete_task.
`,
    'bench-worker',
  );
}

/** The parked agent: waits for instructions, then completes. */
export function waiterDefinition(): AgentDefinition {
  return definition(
    `---
name: bench-waiter
description: Benchmark agent that waits for instructions from its supervisor and then completes.
tools: [wait_for_instruction, complete_task]
agentsMd: false
---
You are a benchmark agent. Wait for instructions from the supervisor, then deliver your result with complete_task.
`,
    'bench-waiter',
  );
}

/** The peer workload's agent: `noop` rounds, then a text answer (what the peer's agent does). */
export function peerDefinition(): AgentDefinition {
  return definition(
    `---
name: bench-peer
description: Benchmark agent that calls noop for its rounds and then answers with text.
tools: [noop]
agentsMd: false
---
You are a benchmark agent. Call the noop tool when asked, then answer with a short text.
`,
    'bench-peer',
  );
}

/** A fresh empty directory: agents' cwd (nothing to discover) and journal root. */
export function scratchDir(prefix: string): { readonly dir: string; readonly remove: () => void } {
  const root = process.env[SCRATCH_ROOT_ENV];
  const dir = mkdtempSync(path.join(root ?? tmpdir(), `troupe-bench-${prefix}-`));
  // Under the runner, the runner removes everything at the end.
  return { dir, remove: root ? () => {} : () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Microseconds to create (open and close) one new journal file in `dir`, over `files` files: what
 * every agent pays once, in the kernel, before its first event. Reported next to the figures that
 * journal thousands of agents, because on some filesystems it swings by an order of magnitude
 * with what was deleted nearby (see SCRATCH_ROOT_ENV).
 */
export function journalCreateUs(dir: string, files = 200): number {
  const probe = mkdtempSync(path.join(dir, 'create-probe-'));
  const start = performance.now();
  for (let i = 0; i < files; i += 1) {
    JournalWriter.open(path.join(probe, `agent-${i}.jsonl`), { fsync: 'never' }).close();
  }
  return Math.round(((performance.now() - start) * 1000) / files);
}

/** Options of {@link runInProcess}. */
export interface InProcessOptions {
  readonly agents: number;
  readonly definition: AgentDefinition;
  /** One provider for all agents (a provider is stateless between turns). */
  readonly provider: Provider;
  readonly task: (index: number) => string;
  readonly cwd: string;
  /** Journal each agent to `<journalDir>/<id>.jsonl` like an actor host does; none when undefined. */
  readonly journalDir: string | undefined;
  readonly fsync: 'always' | 'interval' | 'never';
}

/** The modules of bench/support/in-process-loop.ts. */
type InProcessLoop = typeof import('./in-process-loop.ts');

const IN_PROCESS_LOOP = fileURLToPath(new URL('./in-process-loop.ts', import.meta.url));
let inProcessLoopModules: Promise<InProcessLoop> | undefined;

/**
 * The loop the in-process baseline runs, from its esbuild bundle (workers/dev-bundle.mjs
 * `bundleModule`), as the actor hosts run theirs, not through tsx: tsx compiles with esbuild's
 * `keepNames`, which wraps every named closure in `__name()` (an `Object.defineProperty` that also
 * makes the function a dictionary), ~2 % of the loop's time that the hosts and a user of the
 * compiled package do not pay (bench/RESULTS.md, session 8). Through tsx when bundling is off or
 * fails.
 */
export function inProcessLoop(): Promise<InProcessLoop> {
  const modules: Promise<InProcessLoop> =
    inProcessLoopModules ??
    (bundleModule(IN_PROCESS_LOOP) as Promise<URL | undefined>).then(
      (bundled) => import((bundled ?? pathToFileURL(IN_PROCESS_LOOP)).href) as Promise<InProcessLoop>,
    );
  inProcessLoopModules = modules;
  return modules;
}

/** The simulated model for the in-process baseline, from the same modules as its loop. */
export async function inProcessSimulated(options: SimulatedProviderOptions): Promise<Provider> {
  const loop = await inProcessLoop();
  return new loop.SimulatedProvider(options);
}

/**
 * Runs every agent with the loop on this thread, all at once, the way one actor host runs its
 * actors (shared tool registry and prompt cache, one journal per agent), with the bundled loop
 * ({@link inProcessLoop}).
 */
export async function runInProcess(options: InProcessOptions): Promise<AgentOutcome[]> {
  const { createToolRegistry, JournalWriter, noopTool, runAgent } = await inProcessLoop();
  const registry = createToolRegistry([noopTool]);
  const promptCache = new Map<string, Promise<string>>();
  return Promise.all(
    Array.from({ length: options.agents }, async (_, index) => {
      const agentId = `agent-${index}`;
      const journal =
        options.journalDir === undefined
          ? undefined
          : JournalWriter.open(path.join(options.journalDir, `${agentId}.jsonl`), {
              fsync: options.fsync,
              batch: true,
            });
      try {
        return await runAgent({
          agentId,
          definition: options.definition,
          task: options.task(index),
          provider: options.provider,
          model: 'default',
          registry,
          cwd: options.cwd,
          ...(journal ? { journal } : {}),
          promptCache,
        });
      } finally {
        journal?.close();
      }
    }),
  );
}

/** Throws unless every outcome completed: a benchmark of failing agents measures nothing. */
export function assertCompleted(outcomes: readonly AgentOutcome[], what: string): void {
  const failed = outcomes.filter((outcome) => outcome.status !== 'completed');
  if (failed.length === 0) return;
  const first = failed[0];
  const reason = first?.status === 'failed' ? `${first.reason}: ${first.error.message}` : '';
  throw new Error(`${what}: ${failed.length} of ${outcomes.length} agents did not complete (${reason})`);
}

/**
 * The fan-out workload's Supervisor (fanout-overhead, fanout-split): `definition` on `threads`
 * threads with the simulated model's `rounds`, the noop tool module, journals under `journalDir`.
 */
export function fanoutSupervisor(options: {
  readonly threads: number;
  readonly cwd: string;
  readonly journalDir: string;
  readonly definition: AgentDefinition;
  readonly rounds: number;
}): Supervisor {
  return new Supervisor({
    threads: options.threads,
    cwd: options.cwd,
    compat: false,
    journalDir: options.journalDir,
    definitions: [options.definition],
    toolModules: [NOOP_TOOL_MODULE],
    providers: { simulated: { kind: 'simulated', options: { rounds: options.rounds } } },
  });
}
