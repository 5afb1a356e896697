/**
 * `troupe run AGENT --task TEXT`: runs one agent in this process with live progress, journals it,
 * and prints its result. Exits 0 when the agent completed and 1 when it failed.
 */
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { COMMAND_HELP } from './commands.ts';
import type { CliIO } from './main.ts';
import { executeLive } from './shared/live.ts';
import { prepareRun } from './shared/session.ts';

interface RunFlags {
  readonly task: string;
  readonly provider?: string;
  readonly model?: string;
  readonly journal?: string;
  readonly cwd?: string;
  readonly json?: boolean;
  readonly maxSteps?: number;
}

/** Registers `troupe run` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  program
    .command('run')
    .description(COMMAND_HELP.run.description)
    .argument('<agent>', 'agent name (see `troupe agents list`)')
    .requiredOption('--task <text>', 'the task to give the agent')
    .option(
      '--provider <name>',
      'simulated, openai or anthropic (default: openai or anthropic when its API key is set, else simulated)',
    )
    .option('--model <model>', "model name (default: the definition's model, else the provider's default)")
    .option('--journal <file>', 'journal file (default: <cwd>/.troupe/runs/<timestamp>-<agent>-<id>.jsonl)')
    .option('--cwd <dir>', 'working directory: agents are found from it, file tools are confined to it')
    .option('--json', 'print JSON lines: a Run header, every audit event as journalled, an Outcome')
    .option('--max-steps <n>', "rounds allowed (default: the definition's maxSteps)", positiveInteger)
    .action(async (agent: string, flags: RunFlags) => {
      const session = await prepareRun({
        agent,
        task: flags.task,
        cwd: resolve(flags.cwd ?? process.cwd()),
        ...(flags.provider === undefined ? {} : { provider: flags.provider }),
        ...(flags.model === undefined ? {} : { model: flags.model }),
        ...(flags.journal === undefined ? {} : { journal: resolve(flags.journal) }),
        ...(flags.maxSteps === undefined ? {} : { maxSteps: flags.maxSteps }),
      });
      setExit(await executeLive(session, io, { json: flags.json === true }));
    });
}

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < 1) {
    throw new InvalidArgumentError(`Expected a positive integer, got ${JSON.stringify(value)}.`);
  }
  return parsed;
}
