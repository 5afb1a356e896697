/**
 * The `troupe` command. Each subcommand lives in its own file and registers itself on the program.
 */
import { Command, CommanderError } from 'commander';
import { isTroupeError } from '../errors.ts';

/** Output sinks, replaceable in tests. */
export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

const defaultIO: CliIO = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

type Registrar = (program: Command, io: CliIO, setExit: (code: number) => void) => void;

async function registrars(): Promise<Registrar[]> {
  const mods = await Promise.all([
    import('./agents.ts'),
    import('./run.ts'),
    import('./resume.ts'),
    import('./verify.ts'),
    import('./fanout.ts'),
    import('./report.ts'),
    import('./demo.ts'),
    import('./worker.ts'),
  ]);
  return mods.map((m) => m.register);
}

/** Runs the CLI with `argv` (without `node` and the script) and resolves to the exit code. */
export async function main(argv: readonly string[], io: CliIO = defaultIO): Promise<number> {
  let exitCode = 0;
  const program = new Command('troupe')
    .description('Actor-based multi-agent orchestrator: LLM agents as actors in worker threads.')
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError();
  for (const register of await registrars()) {
    register(program, io, (code) => {
      exitCode = Math.max(exitCode, code);
    });
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version'
        ? 0
        : error.exitCode || 2;
    }
    if (isTroupeError(error)) {
      io.stderr(`troupe: ${error.code}: ${error.message}\n`);
      return error.code === 'internal' ? 70 : 1;
    }
    io.stderr(
      `troupe: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return 70;
  }
  return exitCode;
}
