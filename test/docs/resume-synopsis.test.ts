/**
 * README's command table names every flag each command's `--help` shows, and no other: the table
 * listed `troupe resume --max-run-tokens ... --approve` and left out `--json`, `--redis`, the OTLP
 * and most permission flags; it had no row for `troupe worker`, and its rows for `run`, `fanout`,
 * `chat`, `agents`, `blocks`, `mcp` and `approve` each left flags out. `troupe resume`'s two forms
 * are checked one by one, in README and in the docs; docs/cli.md's headings that name flags name
 * all of them (`troupe demo`'s left out `--otlp`).
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMAND_HELP, type CommandName } from '../../src/cli/commands.ts';
import { register } from '../../src/cli/resume.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';

type Registrar = (program: Command, io: CliIO, setExit: (code: number) => void) => void;

const loaders: Record<CommandName, () => Promise<{ register: Registrar }>> = {
  agents: () => import('../../src/cli/agents.ts'),
  blocks: () => import('../../src/cli/blocks.ts'),
  mcp: () => import('../../src/cli/mcp.ts'),
  run: () => import('../../src/cli/run.ts'),
  chat: () => import('../../src/cli/chat.ts'),
  resume: () => import('../../src/cli/resume.ts'),
  verify: () => import('../../src/cli/verify.ts'),
  fanout: () => import('../../src/cli/fanout.ts'),
  report: () => import('../../src/cli/report.ts'),
  show: () => import('../../src/cli/show.ts'),
  score: () => import('../../src/cli/score.ts'),
  compare: () => import('../../src/cli/compare.ts'),
  replay: () => import('../../src/cli/replay.ts'),
  demo: () => import('../../src/cli/demo.ts'),
  approve: () => import('../../src/cli/approve.ts'),
  worker: () => import('../../src/cli/worker.ts'),
};

/** Every long flag of `command` and of its subcommands (`agents list`, `agents show`, ...). */
function longFlags(command: Command): string[] {
  return [
    ...command.options.flatMap((option) => (option.long === undefined ? [] : [option.long])),
    ...command.commands.flatMap(longFlags),
  ];
}

/** The long flags `troupe NAME --help` (and its subcommands' help) shows. */
async function commandFlags(name: CommandName): Promise<Set<string>> {
  const program = new Command('troupe');
  (await loaders[name]()).register(program, { stdout: () => {}, stderr: () => {} }, () => {});
  const command = program.commands.find((candidate) => candidate.name() === name);
  expect(command, name).toBeDefined();
  return new Set(command === undefined ? [] : longFlags(command));
}

const read = (file: string): string => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

/** The flags each form takes; together, every flag of `--help`. */
const RUN_DIR = [
  '--json',
  '--max-run-tokens',
  '--request-timeout-ms',
  '--idle-timeout-ms',
  '--retry-failed',
  '--reason',
  '--redis',
  '--redis-down-timeout-ms',
  '--retain-seconds',
  '--otlp',
  '--otlp-content',
  '--approve',
];
const JOURNAL = [
  '--json',
  '--cwd',
  '--allow',
  '--ask',
  '--deny',
  '--permissions',
  '--permission-mode',
  '--allow-bypass-permissions',
  '--approve',
  '--approval-timeout',
  '--request-timeout-ms',
  '--idle-timeout-ms',
  '--otlp',
  '--otlp-content',
];

function helpFlags(): string[] {
  const program = new Command('troupe');
  register(program, { stdout: () => {}, stderr: () => {} }, () => {});
  const resume = program.commands.find((command) => command.name() === 'resume');
  return (resume?.options ?? []).flatMap((option) => (option.long === undefined ? [] : [option.long]));
}

/** The flags named in `text` (`--allow\|--ask` counts both, `--[no-]tool-calls` both forms). */
function named(text: string): Set<string> {
  const expanded = text.replace(/--\[no-\]([a-z][a-z-]*)/g, '--$1 --no-$1');
  return new Set(expanded.match(/--[a-z][a-z-]*/g) ?? []);
}

/** README's command table: for each command, the flags its rows name (both columns). */
function readmeRows(): Map<string, Set<string>> {
  const rows = new Map<string, Set<string>>();
  for (const line of read('README.md').split('\n')) {
    const name = /^\| `troupe ([a-z]+)/.exec(line)?.[1];
    if (name === undefined) continue;
    rows.set(name, new Set([...(rows.get(name) ?? []), ...named(line)]));
  }
  return rows;
}

/** The one line of `text` that starts with `prefix`. */
function lineStarting(text: string, prefix: string): string {
  const lines = text.split('\n').filter((line) => line.startsWith(prefix));
  expect(lines, prefix).toHaveLength(1);
  return lines[0] ?? '';
}

describe("troupe resume's flags in the docs", () => {
  it('each form takes a known set of flags, and together they are every flag of --help', () => {
    expect(new Set([...RUN_DIR, ...JOURNAL])).toEqual(new Set(helpFlags()));
  });

  it("README's command table lists every flag of each form", () => {
    const readme = read('README.md');
    const runDir = named(lineStarting(readme, '| `troupe resume RUN_DIR').split('` |')[0] ?? '');
    const journal = named(lineStarting(readme, '| `troupe resume JOURNAL').split('` |')[0] ?? '');
    for (const flag of RUN_DIR) expect(runDir, `RUN_DIR ${flag}`).toContain(flag);
    for (const flag of JOURNAL) expect(journal, `JOURNAL ${flag}`).toContain(flag);
  });

  it("docs/cli.md's heading and docs/cli-run.md's synopsis list every flag of each form", () => {
    const runDir = named(lineStarting(read('docs/cli.md'), '## `troupe resume RUN_DIR'));
    for (const flag of RUN_DIR) expect(runDir, `RUN_DIR ${flag}`).toContain(flag);
    const cliRun = read('docs/cli-run.md');
    const start = cliRun.indexOf('\ntroupe resume JOURNAL [');
    const synopsis = cliRun.slice(start, cliRun.indexOf('```', start));
    expect(start).toBeGreaterThan(0);
    const journal = named(synopsis);
    for (const flag of JOURNAL) expect(journal, `JOURNAL ${flag}`).toContain(flag);
  });
});

describe("README's command table", () => {
  it('has a row for every command, and each names exactly the flags of its --help', async () => {
    const rows = readmeRows();
    expect.soft([...rows.keys()].sort()).toEqual(Object.keys(COMMAND_HELP).sort());
    for (const name of Object.keys(COMMAND_HELP) as CommandName[]) {
      expect.soft(rows.get(name), name).toEqual(await commandFlags(name));
    }
  });
});

describe("docs/cli.md's command headings", () => {
  it('a heading that names flags names exactly those of its --help (resume: its forms, above)', async () => {
    const headings = read('docs/cli.md')
      .split('\n')
      .filter((line) => line.startsWith('## `troupe ') && !line.startsWith('## `troupe resume '));
    const checked: string[] = [];
    for (const heading of headings) {
      const name = /^## `troupe ([a-z]+)/.exec(heading)?.[1] as CommandName | undefined;
      const flags = named(heading);
      if (name === undefined || flags.size === 0) continue;
      checked.push(name);
      expect.soft(flags, heading).toEqual(await commandFlags(name));
    }
    expect(checked).toEqual(expect.arrayContaining(['report', 'show', 'demo']));
  });
});
