import { EventEmitter } from 'node:events';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { executeSession } from '../../src/run-dir/execute.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { RunDirWriter } from '../../src/run-dir/run-dir.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { terminalAbilities } from '../../src/run-dir/terminal-style.ts';
import { savedEnv } from '../fixtures/cli/cli-helpers.ts';
import { captureIO, tempDir } from '../run-dir/helpers.ts';

// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for escape sequences is the point
const SGR = /\u001b\[[0-9;]*m/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for escape sequences is the point
const CURSOR = /\u001b\[[0-9;]*[A-HJK]/;

const restoreEnv = savedEnv(['NO_COLOR', 'FORCE_COLOR', 'TERM']);
let dir: string;
let cleanup: () => void;
let planFile: string;

beforeAll(() => {
  ({ dir, cleanup } = tempDir('troupe-no-color-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
  planFile = path.join(dir, 'plan.yaml');
  writeFileSync(
    planFile,
    ['cwd: .', 'threads: 1', 'agent: worker', 'runs:', '  - task: Review a.md'].join('\n'),
  );
});
afterEach(() => restoreEnv());
afterAll(() => cleanup());

/** What a one-agent fan-out writes to stdout when stdout is a terminal, under `env`. */
async function terminalOutput(env: Readonly<Record<string, string | undefined>>): Promise<string> {
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  const { plan, definitions } = await loadPlan(planFile);
  const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
  const writer = RunDirWriter.create(path.join(dir, `run-${Math.random().toString(36).slice(2)}`), runPlan);
  const io = captureIO();
  await executeSession({
    plan: runPlan,
    writer,
    work: runPlan.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false })),
    kind: 'fanout',
    definitions,
    json: false,
    tty: true,
    columns: () => 80,
    io,
    signals: new EventEmitter(),
  });
  return io.out();
}

describe('NO_COLOR, FORCE_COLOR=0 and TERM=dumb', () => {
  it('a terminal gets the coloured, redrawn status block by default', async () => {
    const out = await terminalOutput({ NO_COLOR: undefined, FORCE_COLOR: undefined, TERM: 'xterm-256color' });
    expect(out).toMatch(SGR);
    expect(out).toMatch(CURSOR);
  });

  it.each([
    ['NO_COLOR=1', { NO_COLOR: '1', FORCE_COLOR: undefined }],
    ['NO_COLOR=yes', { NO_COLOR: 'yes', FORCE_COLOR: undefined }],
    ['FORCE_COLOR=0', { NO_COLOR: undefined, FORCE_COLOR: '0' }],
  ])('%s keeps the block redrawn in place but writes no colour', async (_name, env) => {
    const out = await terminalOutput({ ...env, TERM: 'xterm-256color' });
    expect(out).not.toMatch(SGR);
    expect(out).toMatch(CURSOR);
    expect(out).toContain('✔');
  });

  it('TERM=dumb gets plain lines, as off a terminal: no colour and no cursor movement', async () => {
    const out = await terminalOutput({ NO_COLOR: undefined, FORCE_COLOR: undefined, TERM: 'dumb' });
    expect(out).not.toContain('\u001b');
    expect(out).toMatch(/^\+\S+\s+completed /m);
    expect(out).toContain('finished: 1 of 1 completed');
  });

  it('an empty NO_COLOR leaves colours on (no-color.org: any non-empty value)', () => {
    expect(terminalAbilities({ NO_COLOR: '' })).toEqual({ colour: true, cursor: true });
    expect(terminalAbilities({ FORCE_COLOR: 'false' })).toEqual({ colour: false, cursor: true });
  });
});
