/** The `troupe` program itself: help without loading subcommands, --version, unknown commands. */
import { readFileSync } from 'node:fs';
import { Command, Help } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMAND_HELP, type CommandName } from '../../src/cli/commands.ts';
import { main } from '../../src/cli/main.ts';
import type { CliIO } from '../../src/cli/shared/io.ts';

const version = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

const loaders: Record<CommandName, () => Promise<{ register: (...args: never[]) => void }>> = {
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

describe('troupe', () => {
  it('--version and -V print the package version', async () => {
    expect(await run('--version')).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    expect((await run('-V')).stdout).toBe(`${version}\n`);
  });

  it('--help lists every subcommand exactly as the subcommand registers itself', async () => {
    const { code, stdout } = await run('--help');
    expect(code).toBe(0);
    const help = new Help();
    for (const name of Object.keys(COMMAND_HELP) as CommandName[]) {
      const program = new Command('troupe');
      const { register } = (await loaders[name]()) as {
        register: (program: Command, io: CliIO, setExit: (code: number) => void) => void;
      };
      register(program, { stdout: () => {}, stderr: () => {} }, () => {});
      const registered = program.commands.find((command) => command.name() === name);
      expect(registered, name).toBeDefined();
      if (registered === undefined) continue;
      expect(help.subcommandTerm(registered)).toBe(COMMAND_HELP[name].term);
      expect(registered.description()).toBe(COMMAND_HELP[name].description);
      expect(stdout).toContain(`  ${COMMAND_HELP[name].term}  `);
    }
  });

  it('`help NAME` and `NAME --help` show that command', async () => {
    const viaHelp = await run('help', 'verify');
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toMatch(/^Usage: troupe verify \[options\] <journal>/);
    expect((await run('verify', '--help')).stdout).toBe(viaHelp.stdout);
  });

  it('a mistyped command prints the error, the nearest command and where the list is, not the whole help', async () => {
    const typo = await run('fanot', 'plan.yaml');
    expect(typo).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "error: unknown command 'fanot'\n(Did you mean fanout?)\n(`troupe --help` lists the commands)\n",
    });
    const unknown = await run('frobnicate');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(
      "error: unknown command 'frobnicate'\n(`troupe --help` lists the commands)\n",
    );
  });

  it('a bad option or argument prints the error and where the options are, not the whole help', async () => {
    const missing = await run('run', 'worker');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      "error: required option '--task <text>' not specified\n(`troupe run --help` lists its options)\n",
    );
    const nested = await run('blocks', 'show');
    expect(nested.stderr).toBe(
      "error: missing required argument 'id'\n(`troupe blocks show --help` lists its options)\n",
    );
  });

  it('a mistyped subcommand of a command of commands points to the list of its commands', async () => {
    expect(await run('agents', 'lis')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "error: unknown command 'lis'\n(Did you mean list?)\n(`troupe agents --help` lists its commands)\n",
    });
  });

  it('a bad --backend says what was expected and what it got, as the other flags do', async () => {
    const bad = await run('fanout', 'plan.yaml', '--backend', 'redos');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(
      "error: option '--backend <backend>' argument 'redos' is invalid. Expected `threads` or `redis`, got `\"redos\"` (string).\n" +
        '(`troupe fanout --help` lists its options)\n',
    );
  });

  it('resume of a path that does not exist names both things it takes', async () => {
    const missing = await run('resume', '/nonexistent/troupe-run');
    expect(missing).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'troupe: journal_not_found: Expected a journal file or a run directory at /nonexistent/troupe-run, found neither\n',
    });
  });

  it('--help ends with the exit codes', async () => {
    const { stdout } = await run('--help');
    expect(stdout).toMatch(
      /\nExit codes:\n {2}0 {4}done[^\n]*\n {2}1 {4}an error[^\n]*\n {2}70 [^\n]*\n {2}130 [^\n]*a run[^\n]*\n {7}[^\n]*SIGHUP[^\n]*\n[^\n]*docs\/errors\.md\n$/,
    );
  });
});
