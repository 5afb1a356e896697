/**
 * `troupe demo` (`npm run demo`): a fan-out on the simulated model, no key needed. An orchestrator
 * agent spawns 8 worker agents over 2 threads, one per file of `examples/`, instructs each over
 * `wait_for_instruction`, collects their `complete_task` results and combines them. The
 * orchestrator's model is examples/orchestrator/orchestrating-model.ts: the simulated model plus
 * the orchestration steps (troupe's built-in simulated model does not call orchestration tools).
 */
import { readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { PACKAGE_ROOT, sourceModulePath } from '../package-files.ts';
import { loadAgentDefinitions } from '../run-dir/agent-files.ts';
import { executeSession } from '../run-dir/execute.ts';
import type { ProviderChoice } from '../run-dir/provider-choice.ts';
import { reportText } from '../run-dir/report-text.ts';
import { defaultRunDir, RunDirWriter, readRunDir } from '../run-dir/run-dir.ts';
import { agentIdFor, newRunId, type RunPlan } from '../run-dir/run-plan.ts';
import { buildTimeline } from '../run-dir/timeline.ts';
import { COMMAND_HELP } from './commands.ts';
import { type CliIO, outputColumns } from './shared/io.ts';
import { type OtlpFlags, otlpOptions, withTelemetry } from './shared/telemetry.ts';

/** troupe's own folder: a clone, or `node_modules/troupe` (the package ships `examples/`). */
const REPO_ROOT = PACKAGE_ROOT;
const EXAMPLES = join(REPO_ROOT, 'examples');
const ORCHESTRATOR = join(EXAMPLES, 'orchestrator');
/** Workers the demo runs: one per file. */
export const DEMO_WORKERS = 8;
const REVIEWABLE = /\.(ts|md|yaml|jsonl)$/;

interface DemoFlags extends OtlpFlags {
  readonly out?: string;
  readonly json?: boolean;
}

/** Registers `troupe demo` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  const command = program
    .command('demo')
    .description(COMMAND_HELP.demo.description)
    .option('--out <dir>', 'run directory (default: .troupe/runs/<timestamp>-<id>)')
    .option('--json', 'print JSONL events instead of progress');
  otlpOptions(command).action(async (flags: DemoFlags) => {
    setExit(await demo(flags, io));
  });
}

/** Runs the demo and resolves to its exit code. */
export async function demo(flags: DemoFlags, io: CliIO): Promise<number> {
  const files = demoFiles();
  const { runId, idPrefix } = newRunId();
  const provider: ProviderChoice = {
    name: 'simulated',
    config: {
      kind: 'module',
      // Compiled to dist/ with the rest of troupe: threads of an installed package cannot load .ts.
      module: sourceModulePath('examples/orchestrator/orchestrating-model.ts'),
      export: 'createOrchestratingModel',
      options: { maxWorkers: DEMO_WORKERS, latency: { meanMs: 150, jitterMs: 100 } },
    },
    simulated: true,
    source: 'demo',
  };
  const agentFiles = [join(ORCHESTRATOR, 'agents', 'orchestrator.md')];
  const task =
    `Review these ${files.length} files of the troupe examples with one worker each: ${files.join(', ')}. ` +
    'Instruct each worker what to focus on, then combine their reviews.';
  const plan: RunPlan = {
    format: 1,
    runId,
    idPrefix,
    createdAt: new Date().toISOString(),
    name: 'troupe demo: an orchestrator and 8 workers review examples/',
    planFile: null,
    cwd: REPO_ROOT,
    provider,
    defaultModel: 'simulated',
    threads: 2,
    isolation: 'shared',
    concurrency: 1,
    agentFiles,
    toolModules: [],
    runs: [
      {
        index: 0,
        agentId: agentIdFor(idPrefix, 0),
        agent: 'orchestrator',
        task,
        context: [],
        metadata: { demo: true },
        source: { file: agentFiles[0] ?? '', line: 1, column: 1 },
      },
    ],
  };
  const root = flags.out === undefined ? defaultRunDir(process.cwd(), runId) : resolve(flags.out);
  const writer = RunDirWriter.create(root, plan);
  const first = plan.runs[0];
  const definitions = await loadAgentDefinitions(agentFiles);
  const { exitCode } = await withTelemetry(flags, io, 'demo', (supervisor) =>
    executeSession({
      plan,
      writer,
      work: first ? [{ run: first, agentId: first.agentId, attempt: 1, resume: false }] : [],
      kind: 'demo',
      definitions,
      json: flags.json === true,
      closing: false,
      io,
      supervisor,
    }),
  );
  if (flags.json !== true) {
    const contents = readRunDir(root);
    io.stdout(`\n${reportText(contents, buildTimeline(contents, { spans: false }), outputColumns())}`);
  }
  return exitCode;
}

/** The first files of examples/ (sorted, paths relative to the repo root) for the workers to review. */
function demoFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (REVIEWABLE.test(entry.name)) found.push(relative(REPO_ROOT, path));
    }
  };
  walk(EXAMPLES);
  return found.slice(0, DEMO_WORKERS);
}
