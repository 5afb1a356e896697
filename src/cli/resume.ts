/**
 * `troupe resume JOURNAL`: continues an agent from its journal after a crash or a kill. Finished
 * tool calls are not run again; a call that was cut off is recorded as interrupted. A directory
 * is a fan-out run directory and is handed to the fan-out resume.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { COMMAND_HELP } from './commands.ts';
import { resumeRunDir } from './fanout-resume.ts';
import type { CliIO } from './main.ts';
import { executeLive } from './shared/live.ts';
import { prepareResume } from './shared/session.ts';

interface ResumeFlags {
  readonly json?: boolean;
  readonly cwd?: string;
}

/** Registers `troupe resume` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  program
    .command('resume')
    .description(COMMAND_HELP.resume.description)
    .argument('<journal>', 'journal file of the agent, or a run directory')
    .option('--json', 'print JSON lines: a Run header, every new audit event as journalled, an Outcome')
    .option('--cwd <dir>', 'working directory (default: the one recorded when the run started)')
    .action(async (target: string, flags: ResumeFlags) => {
      const path = resolve(target);
      const json = flags.json === true;
      if (existsSync(path) && statSync(path).isDirectory()) {
        setExit(await resumeRunDir(path, { json }, io));
        return;
      }
      const session = await prepareResume({
        journal: path,
        ...(flags.cwd === undefined ? {} : { cwd: resolve(flags.cwd) }),
      });
      setExit(await executeLive(session, io, { json }));
    });
}
