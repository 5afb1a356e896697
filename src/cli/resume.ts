/**
 * `troupe resume JOURNAL`: continues an agent from its journal after a crash or a kill. Finished
 * tool calls are not run again; a call that was cut off is recorded as interrupted. A directory
 * is a fan-out run directory and is handed to the fan-out resume.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { CliIO } from './main.ts';
import { EXIT_USAGE } from './shared/constants.ts';
import { executeLive } from './shared/live.ts';
import { prepareResume } from './shared/session.ts';

interface ResumeFlags {
  readonly json?: boolean;
  readonly cwd?: string;
}

/** What the fan-out resume module exports (it lives in ./fanout-resume.ts, written by the fan-out area). */
type ResumeRunDir = (dir: string, options: { readonly json: boolean }, io: CliIO) => Promise<number> | number;

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
        setExit(await resumeRunDirectory(path, json, io));
        return;
      }
      const session = await prepareResume({
        journal: path,
        ...(flags.cwd === undefined ? {} : { cwd: resolve(flags.cwd) }),
      });
      setExit(await executeLive(session, io, { json }));
    });
}

async function resumeRunDirectory(dir: string, json: boolean, io: CliIO): Promise<number> {
  // The module may not exist yet: it belongs to the fan-out area. Its absence is a missing feature,
  // while an error from inside it is that module's to report, so existence is checked first.
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  const url = new URL(`./fanout-resume${extension}`, import.meta.url);
  if (!existsSync(url)) {
    io.stderr(
      `troupe: ${dir} is a directory: resuming a run directory is not available yet; ` +
        'pass the journal file of one agent instead\n',
    );
    return EXIT_USAGE;
  }
  const module = (await import(url.href)) as { readonly resumeRunDir?: ResumeRunDir };
  if (typeof module.resumeRunDir !== 'function') {
    io.stderr(
      `troupe: resuming a run directory is not available yet (${url.pathname} exports no resumeRunDir)\n`,
    );
    return EXIT_USAGE;
  }
  return module.resumeRunDir(dir, { json }, io);
}
