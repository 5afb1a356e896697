/**
 * `troupe replay RUN_DIR|JOURNAL`: runs a recorded run again on the current (or `--agent`)
 * version of its agents, their tool calls answered from the recording, into a new run directory
 * that `troupe compare`, `troupe score`, `troupe report` and `troupe resume` read like any other
 * (see docs/evaluation.md, "Replay").
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { executeSession } from '../run-dir/execute.ts';
import { printable } from '../run-dir/format.ts';
import { displayPath } from '../run-dir/plan-problems.ts';
import { checkProvider } from '../run-dir/provider-choice.ts';
import { planReplay } from '../run-dir/replay-plan.ts';
import { defaultRunDir, RunDirWriter } from '../run-dir/run-dir.ts';
import { checkScorerModules } from '../run-dir/run-scoring.ts';
import { COMMAND_HELP } from './commands.ts';
import { positiveInteger } from './shared/integer-flag.ts';
import type { CliIO } from './shared/io.ts';

interface ReplayFlags {
  readonly agent?: string;
  readonly model?: string;
  readonly out?: string;
  readonly json?: boolean;
  readonly threads?: number;
  readonly concurrency?: number;
}

/** Registers `troupe replay` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  program
    .command('replay')
    .description(COMMAND_HELP.replay.description)
    .argument('<source>', 'a run directory (troupe fanout) or an agent journal file (troupe run)')
    .option('--agent <file|name>', 'the agent version to replay on: a definition file, or an agent name')
    .option('--model <model>', "model to replay on (default: the recorded run's)")
    .option('--out <dir>', 'run directory (default: .troupe/runs/<timestamp>-<id>)')
    .option('--json', 'print JSONL events instead of progress')
    .option('--threads <n>', "worker threads (default: the recorded run's)", positiveInteger)
    .option('--concurrency <n>', "agents running at once (default: the recorded run's)", positiveInteger)
    .action(async (source: string, flags: ReplayFlags) => {
      setExit(await replay(source, flags, io));
    });
}

/** Runs `troupe replay` and resolves to its exit code (0 every entry completed, 1 some failed, 130 interrupted). */
export async function replay(source: string, flags: ReplayFlags, io: CliIO): Promise<number> {
  const cwd = process.cwd();
  const { plan, definitions, unrecorded } = await planReplay({
    source,
    cwd,
    ...(flags.agent === undefined ? {} : { agent: flags.agent }),
    ...(flags.model === undefined ? {} : { model: flags.model }),
    ...(flags.threads === undefined ? {} : { threads: flags.threads }),
    ...(flags.concurrency === undefined ? {} : { concurrency: flags.concurrency }),
  });
  for (const entry of unrecorded) {
    io.stderr(
      `${printable(
        `note: entry ${entry.index}${entry.label === undefined ? '' : ` (id ${entry.label})`} has no recorded journal at ${displayPath(entry.journal, cwd)}; it replays with nothing recorded (its read-only calls run live, the others are refused)`,
      )}\n`,
    );
  }
  await checkProvider(plan.provider);
  await checkScorerModules(plan);
  const writer = RunDirWriter.create(
    flags.out === undefined ? defaultRunDir(cwd, plan.runId) : resolve(flags.out),
    plan,
  );
  const stored = writer.plan ?? plan;
  const { exitCode } = await executeSession({
    plan: stored,
    writer,
    work: stored.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false })),
    kind: 'replay',
    definitions,
    json: flags.json === true,
    io,
  });
  return exitCode;
}
