/**
 * The `troupe` command. Each subcommand lives in its own file and registers itself on the program.
 */
import { Command, CommanderError } from 'commander';
import { isTroupeError } from '../errors.ts';
import { redactText } from '../journal/redact.ts';
import type { CliIO } from './shared/io.ts';

const defaultIO: CliIO = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

type Registrar = (program: Command, io: CliIO, setExit: (code: number) => void) => void;

type CommandModule = { register: Registrar };

/** Subcommand modules, loaded on demand: each pulls in a different part of troupe. */
const COMMANDS: Readonly<Record<string, () => Promise<CommandModule>>> = {
  agents: () => import('./agents.ts'),
  mcp: () => import('./mcp.ts'),
  run: () => import('./run.ts'),
  resume: () => import('./resume.ts'),
  verify: () => import('./verify.ts'),
  fanout: () => import('./fanout.ts'),
  report: () => import('./report.ts'),
  show: () => import('./show.ts'),
  score: () => import('./score.ts'),
  compare: () => import('./compare.ts'),
  demo: () => import('./demo.ts'),
  worker: () => import('./worker.ts'),
};

/** Only the named subcommand's module is loaded; help and unknown commands load them all. */
async function registrars(argv: readonly string[]): Promise<Registrar[]> {
  const first = argv[0];
  const load =
    first !== undefined && Object.hasOwn(COMMANDS, first) ? [COMMANDS[first]] : Object.values(COMMANDS);
  const mods = await Promise.all(load.map((loader) => (loader ? loader() : Promise.resolve(undefined))));
  return mods.filter((m) => m !== undefined).map((m) => m.register);
}

/** Runs the CLI with `argv` (without `node` and the script) and resolves to the exit code. */
export async function main(argv: readonly string[], output: CliIO = defaultIO): Promise<number> {
  // Everything printed passes the journal's redaction: answers, error messages from providers and
  // JSON lines alike. (Control characters are stripped where model text is formatted: our own
  // live display uses escape sequences.)
  const io: CliIO = {
    stdout: (text) => output.stdout(redactText(text)),
    stderr: (text) => output.stderr(redactText(text)),
  };
  let exitCode = 0;
  const program = new Command('troupe')
    .description('Actor-based multi-agent orchestrator: LLM agents as actors in worker threads.')
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError();
  for (const register of await registrars(argv)) {
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
