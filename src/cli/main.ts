/**
 * The `troupe` command. Each subcommand lives in its own file and registers itself on the program.
 * Only the module of the command being run is loaded: `troupe --help` and `--version` load none,
 * so they start in the time Node itself takes.
 */
import { Command, CommanderError } from 'commander';
import { isTroupeError } from '../errors.ts';
import { redactText } from '../journal/redact.ts';
import { packageVersion } from '../package-files.ts';
import { COMMAND_HELP, type CommandName } from './commands.ts';
import type { CliIO } from './shared/io.ts';

type Registrar = (program: Command, io: CliIO, setExit: (code: number) => void) => void;

type CommandModule = { register: Registrar };

/** The module that registers each subcommand, loaded only when that command runs. */
const LOADERS: Readonly<Record<CommandName, () => Promise<CommandModule>>> = {
  agents: () => import('./agents.ts'),
  blocks: () => import('./blocks.ts'),
  mcp: () => import('./mcp.ts'),
  run: () => import('./run.ts'),
  chat: () => import('./chat.ts'),
  resume: () => import('./resume.ts'),
  verify: () => import('./verify.ts'),
  fanout: () => import('./fanout.ts'),
  report: () => import('./report.ts'),
  show: () => import('./show.ts'),
  score: () => import('./score.ts'),
  compare: () => import('./compare.ts'),
  replay: () => import('./replay.ts'),
  demo: () => import('./demo.ts'),
  worker: () => import('./worker.ts'),
  approve: () => import('./approve.ts'),
};

/** Ends `troupe --help`: what a script calling troupe can tell from its exit code (docs/errors.md). */
const EXIT_CODES_HELP = `
Exit codes:
  0    done: every agent completed (also when a reader such as \`head\` closed stdout)
  1    an error (\`troupe: <code>: <message>\`), a bad option, a failed agent or gate
  70   an internal error: a bug, please report it
  130  cancelled by Ctrl-C: a run, chat, resume, fanout, demo or replay (143 after SIGTERM,
       129 after SIGHUP)
Error codes and what each exit code means per command: docs/errors.md`;

/** The subcommand `argv` runs (`troupe help NAME` included), if it names one. */
function commandOf(argv: readonly string[]): CommandName | undefined {
  const name = argv[0] === 'help' ? argv[1] : argv[0];
  return name !== undefined && Object.hasOwn(COMMAND_HELP, name) ? (name as CommandName) : undefined;
}

/** The streams {@link processIO} writes to: the process's, or stand-ins in tests. */
interface OutputStream {
  write(text: string): unknown;
  on(event: 'error', listener: (error: NodeJS.ErrnoException) => void): unknown;
  readonly destroyed?: boolean;
}

/** Output to this process's stdout and stderr; see {@link CliIO.stdoutClosed} for a closed stdout. */
export function processIO(
  stdout: OutputStream = process.stdout,
  stderr: OutputStream = process.stderr,
): CliIO {
  const closed = new AbortController();
  // The terminal stdout was on has gone (a closed window, a dropped ssh session): writes fail with
  // EIO. The SIGHUP that comes with it cancels the run like Ctrl-C (exit 129, summary written);
  // there is just nowhere left to print.
  let hungUp = false;
  stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EIO') {
      hungUp = true;
      return;
    }
    if (error.code !== 'EPIPE') throw error;
    closed.abort(new Error('stdout was closed'));
  });
  // A closed stderr only loses messages; it must not end a run.
  stderr.on('error', () => {});
  return {
    stdout: (text) => {
      if (!closed.signal.aborted && !hungUp) stdout.write(text);
    },
    stderr: (text) => {
      if (stderr.destroyed !== true) stderr.write(text);
    },
    stdoutClosed: closed.signal,
  };
}

/** Runs the CLI with `argv` (without `node` and the script) and resolves to the exit code. */
export async function main(argv: readonly string[], output: CliIO = processIO()): Promise<number> {
  // Everything printed passes the journal's redaction: answers, error messages from providers and
  // JSON lines alike. (Control characters are stripped where model text is formatted: our own
  // live display uses escape sequences.)
  const io: CliIO = {
    stdout: (text) => output.stdout(redactText(text)),
    stderr: (text) => output.stderr(redactText(text)),
    ...(output.stdoutClosed === undefined ? {} : { stdoutClosed: output.stdoutClosed }),
  };
  let exitCode = 0;
  const program = new Command('troupe')
    .description('Actor-based multi-agent orchestrator: LLM agents as actors in worker threads.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .addHelpText('after', EXIT_CODES_HELP)
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    // A mistyped command: the error and commander's "Did you mean", then where the list is, as for
    // a bad option of a command; the whole help (~30 lines) pushed the suggestion off the screen.
    .showHelpAfterError('(`troupe --help` lists the commands)');
  const setExit = (code: number): void => {
    exitCode = Math.max(exitCode, code);
  };
  const command = commandOf(argv);
  if (command !== undefined) {
    (await LOADERS[command]()).register(program, io, setExit);
    // A bad option or argument: the error, then where the options are, not all of them (~70 lines
    // for `run`, which buried the one that mattered).
    const pointToHelp = (parent: Command, prefix: string): void => {
      for (const sub of parent.commands) {
        const name = `${prefix} ${sub.name()}`;
        // `troupe agents lis`: a command of commands lists those, not options.
        const lists = sub.commands.length > 0 ? 'its commands' : 'its options';
        sub.showHelpAfterError(`(\`${name} --help\` lists ${lists})`);
        pointToHelp(sub, name);
      }
    };
    pointToHelp(program, 'troupe');
  } else {
    // Help, --version or an unknown command: list the subcommands without loading any.
    const terms = new Map<Command, string>();
    for (const [name, entry] of Object.entries(COMMAND_HELP)) {
      terms.set(program.command(name).description(entry.description), entry.term);
    }
    const help = program.createHelp();
    program.configureHelp({ subcommandTerm: (cmd) => terms.get(cmd) ?? help.subcommandTerm(cmd) });
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.version' ||
        error.code === 'commander.help'
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
  // Whoever read the output has gone: the command stopped early on purpose, and quietly.
  if (io.stdoutClosed?.aborted) return 0;
  return exitCode;
}
