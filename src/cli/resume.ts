/**
 * `troupe resume JOURNAL`: continues an agent from its journal after a crash or a kill. Finished
 * tool calls are not run again; a call that was cut off is recorded as interrupted. A directory
 * is a fan-out run directory and is handed to the fan-out resume.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { resumeRunDir } from './fanout-resume.ts';
import type { CliIO } from './shared/io.ts';
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
    .description(
      'Continue an agent from its journal (or a fan-out run from its run directory). ' +
        'Tool calls with a recorded result are not run again. Exits 0 when the agent completes, 1 when it fails.',
    )
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
