/**
 * Approvals on the command line (`troupe fanout`, `troupe run`): off a terminal, requests are denied unless an `--approve` rule
 * allows them, and the closing summary, the run directory and `troupe report` list every decision;
 * on a terminal (a real pseudo-terminal, through util-linux `script`), a person answers `y` and `n`.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { repoRoot, simulatedEnv, startCli, tempDir, troupeBin } from '../run-dir/helpers.ts';
import { completeTaskResponse, startMockServer, streamToolCall } from '../supervisor/mock-openai.ts';

const fixtures = path.join(repoRoot, 'test/fixtures/approvals');
const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

let dir: string;
let cleanup: () => void;
const children: ChildProcess[] = [];
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-cli-approvals-'));
  mkdirSync(path.join(dir, '.claude', 'agents'), { recursive: true });
  writeFileSync(
    path.join(dir, '.claude', 'agents', 'asker.md'),
    '---\nname: asker\ndescription: Follows the plan in its task.\n---\nFollow the plan.\n',
  );
});
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const closed = new Promise((resolve) => child.once('close', resolve));
      child.kill('SIGKILL');
      await closed;
    }
  }
  cleanup();
});

/** A plan of one agent per entry of `plans`, each following its list of tool calls. */
function writePlan(plans: readonly (readonly { name: string; args: Record<string, unknown> }[])[]): void {
  writeFileSync(
    path.join(dir, 'plan.yaml'),
    [
      'threads: 1',
      'provider:',
      `  module: ${path.join(fixtures, 'plan-provider.ts')}`,
      'toolModules:',
      `  - ${path.join(fixtures, 'tools.ts')}`,
      'runs:',
      ...plans.map(
        (steps) => `  - { agent: asker, task: ${JSON.stringify(`Go. PLAN:${JSON.stringify(steps)}`)} }`,
      ),
    ].join('\n'),
  );
}

function actions(): string[][] {
  const file = path.join(dir, 'actions.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split('\t').slice(1));
}

/** Runs `troupe ...args` in `dir` on a new pseudo-terminal (util-linux `script`); `onOutput` may type keys. */
function onTerminal(
  args: readonly string[],
  onOutput: (output: string, type: (keys: string) => void, kill: () => void) => void,
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, troupeBin, ...args].map((word) => `'${word}'`).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: dir,
    env: { ...simulatedEnv(env), TERM: 'xterm' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  const type = (keys: string): void => {
    child.stdin?.write(keys);
  };
  // SIGKILLs troupe (and whatever runs between `script` and it): a crash, not a shutdown. Deepest
  // first: killing the shell first let `script` exit and hang up the terminal, and on a loaded
  // machine troupe could take that SIGHUP (a clean cancel, with a result line) before its SIGKILL.
  const kill = (): void => {
    for (const pid of descendants(child.pid ?? -1).reverse()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
    onOutput(output, type, kill);
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  return new Promise((resolve) =>
    child.once('close', (code) => {
      child.stdin?.destroy();
      resolve({ code, output });
    }),
  );
}

/** Every process below `pid`. */
function descendants(pid: number): number[] {
  const listed = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).stdout ?? '';
  const children = listed
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map(Number);
  return children.flatMap((child) => [child, ...descendants(child)]);
}

function journalEvents(file: string): Record<string, unknown>[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function approvalRecords(runDir: string): Record<string, unknown>[] {
  return readFileSync(path.join(runDir, 'approvals.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('approvals in troupe fanout', () => {
  it('off a terminal: --approve rules approve, every other request is denied and the summary lists it', async () => {
    writePlan([
      [
        { name: 'record_action', args: { note: 'one' } },
        { name: 'deploy', args: { target: 'prod' } },
      ],
    ]);
    const runDir = path.join(dir, 'run');
    const run = startCli(
      ['fanout', 'plan.yaml', '--out', runDir, '--ask', 'record_action', '--approve', 'record_action'],
      { cwd: dir },
    );
    expect(await run.exited, run.stderr()).toBe(0);

    // record_action asked (--ask) and an --approve rule approved it; deploy asked (needsApproval
    // for prod) and nobody could be asked: denied, never run.
    expect(actions()).toEqual([['record_action', 'one']]);
    const stdout = run.stdout();
    expect(stdout).toMatch(
      /approvals: 1 approved, 1 denied:\n +\S+-0 asker: deploy \{"target":"prod"\} denied/,
    );
    expect(approvalRecords(runDir)).toMatchObject([
      { tool: 'record_action', approved: true, by: 'rule', decider: '--approve record_action' },
      { tool: 'deploy', approved: false, by: 'rule', decider: 'no terminal', args: { target: 'prod' } },
    ]);
    for (const record of approvalRecords(runDir)) {
      expect(record.requestedAt).toEqual(expect.any(String));
      expect(record.decidedAt).toEqual(expect.any(String));
    }

    const report = startCli(['report', runDir], { cwd: dir });
    expect(await report.exited, report.stderr()).toBe(0);
    expect(report.stdout()).toMatch(/asker.*record_action.*approved/);
    expect(report.stdout()).toMatch(/asker.*deploy.*denied/);
    const html = path.join(dir, 'report.html');
    const htmlReport = startCli(['report', runDir, '--html', html], { cwd: dir });
    expect(await htmlReport.exited, htmlReport.stderr()).toBe(0);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('Approvals (1 approved, 1 denied)');
    expect(page).toMatch(/<td>deploy<\/td><td class="failed">denied<\/td>/);
  });

  it('off a terminal without --approve: an asking call is denied with the reason the model sees', async () => {
    writePlan([[{ name: 'record_action', args: { note: 'one' } }]]);
    const runDir = path.join(dir, 'run');
    const run = startCli(['fanout', 'plan.yaml', '--out', runDir, '--ask', 'record_action'], { cwd: dir });
    expect(await run.exited, run.stderr()).toBe(0);
    expect(actions()).toEqual([]);
    expect(run.stdout()).toContain('approvals: 0 approved, 1 denied:');
    expect(run.stdout()).toContain('last result: `record_action` was denied');
  });

  it.skipIf(!hasScript)(
    'on a terminal: a person answers y, then n; the approved call runs once, the denied one never',
    async () => {
      writePlan([
        [
          { name: 'record_action', args: { note: 'first' } },
          { name: 'record_action', args: { note: 'second' } },
        ],
      ]);
      const runDir = path.join(dir, 'run');
      let answered = 0;
      const { code, output } = await onTerminal(
        ['fanout', 'plan.yaml', '--out', runDir, '--ask', 'record_action'],
        (text, type) => {
          // Each request shows its arguments and the key prompt; answer each once, in turn.
          if (answered === 0 && /\{"note":"first"\}.*\[y\] approve/s.test(text)) {
            answered = 1;
            type('y');
          } else if (answered === 1 && /\{"note":"second"\}.*\[y\] approve/s.test(text)) {
            answered = 2;
            type('n');
          }
        },
      );

      expect(code, output).toBe(0);
      expect(answered).toBe(2);
      expect(actions()).toEqual([['record_action', 'first']]);
      expect(output).toContain('approvals: 1 approved, 1 denied:');
      expect(approvalRecords(runDir)).toMatchObject([
        { tool: 'record_action', args: { note: 'first' }, approved: true, by: 'person', decider: 'tty' },
        { tool: 'record_action', args: { note: 'second' }, approved: false, by: 'person', decider: 'tty' },
      ]);
    },
  );
});

describe('approvals across a crash of troupe fanout', () => {
  it.skipIf(!hasScript)(
    'killed while a call waits: troupe resume RUN_DIR waits again under the same request id, and --approve runs it once',
    async () => {
      writePlan([[{ name: 'record_action', args: { note: 'gated' } }]]);
      const runDir = path.join(dir, 'run');
      let killed = false;
      const first = await onTerminal(
        ['fanout', 'plan.yaml', '--out', runDir, '--ask', 'record_action'],
        (text, _type, kill) => {
          if (!killed && /\{"note":"gated"\}.*\[y\] approve/s.test(text)) {
            killed = true;
            kill();
          }
        },
      );
      expect(killed, first.output).toBe(true);
      expect(actions()).toEqual([]);
      const [journalFile] = readdirSync(path.join(runDir, 'journals'));
      const journal = path.join(runDir, 'journals', journalFile ?? '');
      const asked = journalEvents(journal).filter((event) => event.type === 'ApprovalRequested');
      expect(asked).toHaveLength(1);
      const requestId = asked[0]?.requestId;

      const resumed = startCli(['resume', runDir, '--approve', 'record_action'], { cwd: dir });
      expect(await resumed.exited, resumed.stderr()).toBe(0);
      expect(resumed.stdout()).toContain(`[${String(requestId)}]`);
      expect(actions()).toEqual([['record_action', 'gated']]);
      const events = journalEvents(journal);
      expect(events.filter((event) => event.type === 'ApprovalRequested')).toHaveLength(1);
      expect(events.filter((event) => event.type === 'ApprovalDecided')).toMatchObject([
        { requestId, approved: true, by: 'rule', decider: '--approve record_action' },
      ]);
      expect(approvalRecords(runDir)).toMatchObject([{ requestId, approved: true }]);
    },
  );
});

describe('approvals in troupe run', () => {
  beforeEach(() => {
    writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
    writeFileSync(path.join(dir, 'b.md'), '# B\nBeta.\n');
  });

  it('off a terminal: an --approve rule approves the read of a.md, the read of b.md is denied', async () => {
    const journal = path.join(dir, 'run.jsonl');
    const args = ['run', 'worker', '--task', 'Review a.md and b.md', '--journal', journal];
    const run = startCli([...args, '--ask', 'read_file', '--approve', 'Read(a.md)'], { cwd: dir });
    expect(await run.exited, run.stderr()).toBe(0);
    expect(run.stderr()).toContain('approved: read_file by rule (--approve Read(a.md))');
    expect(run.stderr()).toContain('denied: read_file by rule (no terminal)');
    const decided = journalEvents(journal).filter((event) => event.type === 'ApprovalDecided');
    expect(decided).toMatchObject([
      { approved: true, by: 'rule', decider: '--approve Read(a.md)' },
      { approved: false, by: 'rule', decider: 'no terminal' },
    ]);
    const results = journalEvents(journal).filter((event) => event.type === 'ToolResult');
    expect(results.map((event) => event.ok)).toEqual([true, false, true]);
  });

  it.skipIf(!hasScript)('on a terminal: y approves the first read, n denies the second', async () => {
    const journal = path.join(dir, 'run.jsonl');
    let prompts = 0;
    const { code, output } = await onTerminal(
      ['run', 'worker', '--task', 'Review a.md and b.md', '--journal', journal, '--ask', 'read_file'],
      (text, type) => {
        // One prompt per request, printed when it becomes the one the keys answer.
        const shown = text.split('[y] approve').length - 1;
        if (shown > prompts) {
          prompts = shown;
          type(prompts === 1 ? 'y' : 'n');
        }
      },
    );
    expect(code, output).toBe(0);
    expect(prompts).toBe(2);
    expect(output).toContain('approved: read_file by a person (tty)');
    expect(output).toContain('denied: read_file by a person (tty): denied at the terminal');
    const events = journalEvents(journal);
    expect(events.filter((event) => event.type === 'ApprovalRequested')).toMatchObject([
      { name: 'read_file' },
      { name: 'read_file' },
    ]);
    expect(events.filter((event) => event.type === 'ApprovalDecided')).toMatchObject([
      { approved: true, by: 'person', decider: 'tty' },
      { approved: false, by: 'person', decider: 'tty' },
    ]);
  });
});

describe('a secret in the arguments of a call that asks, in troupe run', () => {
  it.skipIf(!hasScript)(
    'is masked in the prompt a person answers and in the journal; the approved tool gets the real values',
    async () => {
      // The provider's key (masked because troupe was given it), a GitHub token's shape, and a
      // value under a key that names secrets (masked by its key, as the journal masks it).
      const key = 'qz7Xw2mN4pL9vR3tK8yBc5';
      const shaped = 'ghp_Kx7Qm2Wv9Zr4Tn6Yb1Lp3Hs8';
      const listed = 'correct-horse-battery-staple';
      const record = path.join(dir, 'mcp-calls.jsonl');
      mkdirSync(path.join(dir, '.troupe', 'agents'), { recursive: true });
      writeFileSync(
        path.join(dir, '.troupe', 'agents', 'keeper.md'),
        [
          '---',
          'name: keeper',
          'description: Stores what it is given.',
          'mcpServers:',
          '  - vault:',
          `      command: ${JSON.stringify(process.execPath)}`,
          `      args: ${JSON.stringify([path.join(repoRoot, 'test/fixtures/mcp/recording.mjs'), record])}`,
          '---',
          'Store what you are given.',
          '',
        ].join('\n'),
      );
      const args = { name: `db ${key} ${shaped}`, secrets: [listed] };
      const model = await startMockServer({
        '/v1/chat/completions': (_req, res, index) => {
          if (index === 0) streamToolCall(res, 'c1', 'mcp__vault__store_secrets', JSON.stringify(args));
          else completeTaskResponse(res, { stored: true });
        },
      });
      try {
        const journal = path.join(dir, 'run.jsonl');
        let answered = false;
        const { code, output } = await onTerminal(
          ['run', 'keeper', '--task', 'Store them.', '--journal', journal, '--model', 'mock'],
          (text, type) => {
            if (!answered && text.includes('[y] approve')) {
              answered = true;
              type('y');
            }
          },
          { OPENAI_BASE_URL: model.url('/v1'), OPENAI_API_KEY: key },
        );
        expect(code, output).toBe(0);
        expect(answered, output).toBe(true);
        // Masked, not dropped: the person sees which call it is.
        expect(output).toMatch(
          /approval needed: mcp__vault__store_secrets \{"name":"db \[REDACTED\] \[REDACTED\]","secrets":\["\[REDACTED\]"\]\}/,
        );
        const written = readFileSync(journal, 'utf8');
        expect(journalEvents(journal).filter((event) => event.type === 'ApprovalRequested')).toMatchObject([
          { args: { name: 'db [REDACTED] [REDACTED]', secrets: ['[REDACTED]'] } },
        ]);
        for (const secret of [key, shaped, listed]) {
          expect(output).not.toContain(secret);
          expect(written).not.toContain(secret);
        }
        // The server got what the model gave, once.
        const calls = readFileSync(record, 'utf8')
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as { arguments: unknown });
        expect(calls.map((call) => call.arguments)).toEqual([args]);
      } finally {
        await model.close();
      }
    },
    60_000,
  );
});
