/**
 * `troupe resume`'s two forms, as README's command table and the docs list them, name every flag
 * `troupe resume --help` shows: the table listed `--max-run-tokens ... --approve` and left out
 * `--json`, `--redis`, the OTLP and most permission flags.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { register } from '../../src/cli/resume.ts';

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

/** The flags named in `text` (`--allow\|--ask` counts both). */
function named(text: string): Set<string> {
  return new Set(text.match(/--[a-z][a-z-]*/g) ?? []);
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
