/**
 * What `troupe --help` says about each subcommand. Kept apart from the command modules so the help
 * lists them without loading any; each module registers its command with the description given
 * here (test/cli/main.test.ts checks the terms against the registered commands).
 */

/** A subcommand as `troupe --help` lists it. */
export interface CommandHelp {
  /** As the help lists it: name, `[options]` and arguments. */
  readonly term: string;
  readonly description: string;
}

/** The subcommands, in the order `troupe --help` lists them. */
export const COMMAND_HELP = {
  agents: {
    term: 'agents',
    description: 'List, show and validate agent definitions.',
  },
  blocks: {
    term: 'blocks',
    description:
      'List and show the versioned prompt, settings and model-settings blocks definitions refer to.',
  },
  mcp: {
    term: 'mcp',
    description: 'MCP servers: what agents get from here.',
  },
  run: {
    term: 'run [options] <agent>',
    description:
      'Run one agent in this process with live progress and print its result. ' +
      'Exits 0 when the agent completes, 1 when it fails. Ctrl-C cancels it; a second Ctrl-C exits at once.',
  },
  resume: {
    term: 'resume [options] <journal>',
    description:
      'Continue an agent from its journal (or a fan-out run from its run directory). ' +
      'Tool calls with a recorded result are not run again. Exits 0 when the agent completes, 1 when it fails.',
  },
  verify: {
    term: 'verify [options] <journal>',
    description:
      "Check a journal: the hash chain, and every model request's input re-derived from the journal " +
      'against its recorded SHA-256. Exits 0 when it verifies, 1 at the first bad event.',
  },
  fanout: {
    term: 'fanout [options] <plan>',
    description:
      'Run every agent of a plan (YAML) in worker threads and keep the results in a run directory. ' +
      'Uses the simulated model when no API key is set.',
  },
  report: {
    term: 'report [options] <run-dir|journal>',
    description:
      "Summarise a fan-out run directory (or one agent's journal): a table in the terminal, or one " +
      "self-contained HTML file with a timeline and every agent's transcript.",
  },
  show: {
    term: 'show [options] <run-dir|journal> [agent]',
    description:
      "Print one agent's transcript: requests, tool calls with arguments and results, waits, restarts, outcome.",
  },
  score: {
    term: 'score [options] <run-dir>',
    description:
      "Score a fan-out run directory again, with its plan's scorers or another plan's (--plan); " +
      'rewrites the scores in results.jsonl and summary.json.',
  },
  compare: {
    term: 'compare [options] <run-a> <run-b>',
    description:
      'Compare two fan-out runs item by item: outcomes, scores, tokens, cost, latency and tool calls. ' +
      'With --gate, exits 1 when a scorer’s pass rate drops (a CI gate).',
  },
  demo: {
    term: 'demo [options]',
    description:
      'Fan-out demo on the simulated model (no API key): an orchestrator and 8 workers on 2 threads review files of examples/.',
  },
  approve: {
    term: 'approve [options] [request-id]',
    description:
      'List the tool calls that agents on a Redis queue wait to have approved, or approve (or --deny) one by its request id.',
  },
  worker: {
    term: 'worker [options]',
    description: 'Run agent jobs from a Redis queue (the redis backend); start one or more per machine.',
  },
} as const satisfies Readonly<Record<string, CommandHelp>>;

/** A subcommand name. */
export type CommandName = keyof typeof COMMAND_HELP;
