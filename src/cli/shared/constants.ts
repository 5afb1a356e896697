/** Defaults and fixed texts of the agent-running subcommands (`run`, `resume`, `verify`). */

/** Where `troupe run` writes journals when no `--journal` is given, relative to the working directory. */
export const RUNS_DIR = '.troupe/runs';

/** Exit codes: a finished agent (0), a failed agent or bad journal (1), a usage problem (2). */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** Characters of a tool argument shown on a progress line before it is cut with `...`. */
export const PROGRESS_ARG_CHARS = 60;
