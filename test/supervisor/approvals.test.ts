import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentDefinition } from '../../src/definition/types.ts';
import type { AuditEvent, EventOf } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import type { AgentApproval, AgentDecision, SupervisorEvents } from '../../src/supervisor/events.ts';
import type { SupervisorOptions } from '../../src/supervisor/options.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { planTask } from '../fixtures/approvals/plan-provider.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { tempDir } from './helpers.ts';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/approvals');

const open: Supervisor[] = [];
afterEach(async () => {
  for (const supervisor of open.splice(0)) await supervisor.close();
});

function definition(name: string, fields: Partial<AgentDefinition> = {}): AgentDefinition {
  return makeDefinition({ name, path: `/approvals/${name}.md`, agentsMd: false, ...fields });
}

/** One thread, the plan model, the approval test tools; journals in `dir/journals`. */
function start(definitions: AgentDefinition[], options: SupervisorOptions = {}) {
  const dir = tempDir('troupe-approvals-');
  const supervisor = new Supervisor({
    threads: 1,
    providers: { plan: { kind: 'module', module: path.join(fixtures, 'plan-provider.ts') } },
    toolModules: [{ module: path.join(fixtures, 'tools.ts') }],
    definitions,
    compat: false,
    mcpProjectFile: false,
    journalDir: path.join(dir, 'journals'),
    cwd: dir,
    ...options,
  });
  open.push(supervisor);
  const journal = (agentId: string): AuditEvent[] =>
    readJournal(path.join(dir, 'journals', `${agentId}.jsonl`)).events;
  const actions = (): string[][] => {
    const file = path.join(dir, 'actions.log');
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => line.split('\t'));
  };
  return { supervisor, dir, journal, actions };
}

function next<K extends keyof SupervisorEvents>(
  supervisor: Supervisor,
  name: K,
  test: (event: SupervisorEvents[K][0]) => boolean = () => true,
): Promise<SupervisorEvents[K][0]> {
  return new Promise((resolve) => {
    const listener = (...args: SupervisorEvents[K]): void => {
      if (!test(args[0])) return;
      supervisor.off(name, listener as never);
      resolve(args[0]);
    };
    supervisor.on(name, listener as never);
  });
}

function collect<K extends keyof SupervisorEvents>(
  supervisor: Supervisor,
  name: K,
): SupervisorEvents[K][0][] {
  const seen: SupervisorEvents[K][0][] = [];
  supervisor.on(name, ((event: SupervisorEvents[K][0]) => seen.push(event)) as never);
  return seen;
}

const ofType = <T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T) =>
  events.filter((event): event is EventOf<T> => event.type === type);

const asker = definition('asker', { permissions: { allow: [], ask: ['record_action'], deny: [] } });
const worker = definition('worker');

describe('approvals on the threads engine', () => {
  it('parks an asking call while another agent on the same thread keeps working, and runs it once when approved', async () => {
    const { supervisor, journal, actions } = start([asker, worker]);
    const hosts = new Map<string, number>();
    supervisor.on('agent:started', (event) => hosts.set(event.agentId, event.hostId));
    const approvals = collect(supervisor, 'agent:approval');
    const usage: string[] = [];
    supervisor.on('agent:usage', (event) => usage.push(event.agentId));

    const gated = supervisor.spawn('asker', {
      task: planTask([{ name: 'record_action', args: { note: 'gated' } }]),
    });
    const asked = await next(supervisor, 'agent:approval');
    let gatedSettled = false;
    void gated.result.then(() => {
      gatedSettled = true;
    });

    const busy = supervisor.spawn('worker', {
      task: planTask(
        Array.from({ length: 5 }, (_, i) => ({ name: 'record_action', args: { note: `w${i}` } })),
      ),
    });
    expect(await busy.result).toMatchObject({ status: 'completed', answer: 'last result: recorded w4' });
    expect(hosts.get(busy.id)).toBe(hosts.get(gated.id));
    expect(gatedSettled).toBe(false);
    // Parked: one model request (the one that made the call), none while it waits. Its usage signal
    // came before everything the busy agent reported on the same port.
    expect(usage.filter((id) => id === gated.id)).toHaveLength(1);
    expect(actions().filter(([id]) => id === gated.id)).toEqual([]);

    expect(asked).toMatchObject({
      agentId: gated.id,
      agent: 'asker',
      request: {
        agentId: gated.id,
        tool: 'record_action',
        modelName: 'record_action',
        args: { note: 'gated' },
        rule: 'record_action',
        reason: 'it matches `record_action` in permissions.ask',
      },
    });
    expect(asked.request.requestId).toMatch(/^apr_[0-9a-f]{24}$/);
    expect(asked.request.argsHash).toMatch(/^[0-9a-f]{64}$/);
    expect(supervisor.pendingApprovals()).toEqual([asked.request]);

    const decided = next(supervisor, 'agent:decision');
    await supervisor.approve(asked.request.requestId);
    expect(await gated.result).toMatchObject({ status: 'completed', answer: 'last result: recorded gated' });
    expect((await decided).decision).toMatchObject({ approved: true, by: 'person', decider: 'program' });
    expect(actions().filter(([id]) => id === gated.id)).toEqual([[gated.id, 'record_action', 'gated']]);
    expect(approvals).toHaveLength(1);
    expect(usage.filter((id) => id === gated.id)).toHaveLength(2);
    expect(supervisor.pendingApprovals()).toEqual([]);

    const events = journal(gated.id);
    const order = events
      .filter((e) => ['ToolCall', 'ApprovalRequested', 'ApprovalDecided', 'ToolResult'].includes(e.type))
      .map((e) => e.type);
    expect(order).toEqual(['ToolCall', 'ApprovalRequested', 'ApprovalDecided', 'ToolResult']);
    expect(ofType(events, 'ApprovalRequested')[0]).toMatchObject({
      requestId: asked.request.requestId,
      argsHash: asked.request.argsHash,
      args: { note: 'gated' },
    });
    await expect(supervisor.approve(asked.request.requestId)).rejects.toMatchObject({
      code: 'approval_not_pending',
    });
  });

  it("gives the model a denial with the person's reason, and never runs the call", async () => {
    const { supervisor, journal, actions } = start([asker]);
    const handle = supervisor.spawn('asker', {
      task: planTask([{ name: 'record_action', args: { note: 'no' } }]),
    });
    const seen: AgentApproval[] = [];
    handle.on('approval', (event) => {
      seen.push(event);
      void handle.deny(event.request.requestId, 'not on a Friday', { decider: 'reviewer@example' });
    });
    const outcome = await handle.result;
    const text =
      '`record_action` was denied by a person: not on a Friday. It did not run. Do not retry it as is.';
    expect(outcome).toMatchObject({ status: 'completed', answer: `last result: ${text}` });
    expect(seen).toHaveLength(1);
    expect(actions()).toEqual([]);
    const events = journal(handle.id);
    expect(ofType(events, 'ApprovalDecided')).toMatchObject([
      {
        approved: false,
        by: 'person',
        decider: 'reviewer@example',
        reason: 'not on a Friday',
        rule: 'record_action',
      },
    ]);
    expect(ofType(events, 'ToolResult')).toMatchObject([{ ok: false, refused: true, text }]);
  });

  it('denies a call nobody decides before its timeout', async () => {
    const { supervisor, actions } = start([asker], { approvals: { timeoutMs: 50 } });
    const decisions = collect(supervisor, 'agent:decision');
    supervisor.on('agent:approval', () => {});
    const handle = supervisor.spawn('asker', {
      task: planTask([{ name: 'record_action', args: { note: 'late' } }]),
    });
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'completed' });
    expect(outcome.status === 'completed' && outcome.answer).toBe(
      'last result: `record_action` was denied: nobody approved it in time (no decision within 50 ms). It did not run. Do not retry it as is.',
    );
    expect(decisions.map((event) => event.decision)).toMatchObject([{ approved: false, by: 'timeout' }]);
    expect(actions()).toEqual([]);
    expect(supervisor.pendingApprovals()).toEqual([]);
  });

  it("stops asking for a rule approved with remember: 'session', for later calls and later agents", async () => {
    const { supervisor, journal, actions } = start([asker]);
    const approvals = collect(supervisor, 'agent:approval');
    const decisions = collect(supervisor, 'agent:decision');
    supervisor.on('agent:approval', (event) => {
      void supervisor.approve(event.request.requestId, { remember: 'session', decider: 'tty' });
    });
    const steps = [1, 2, 3].map((n) => ({ name: 'record_action', args: { note: `s${n}` } }));
    const first = supervisor.spawn('asker', { task: planTask(steps) });
    expect(await first.result).toMatchObject({ status: 'completed', answer: 'last result: recorded s3' });
    const second = supervisor.spawn('asker', {
      task: planTask([{ name: 'record_action', args: { note: 'again' } }]),
    });
    expect(await second.result).toMatchObject({ status: 'completed' });
    expect(approvals).toHaveLength(1);
    expect(actions().map(([, , note]) => note)).toEqual(['s1', 's2', 's3', 'again']);
    expect(ofType(journal(first.id), 'ApprovalDecided').map((e) => [e.by, e.remember])).toEqual([
      ['person', 'session'],
      ['rule', 'session'],
      ['rule', 'session'],
    ]);
    expect(ofType(journal(second.id), 'ApprovalDecided')).toMatchObject([
      { approved: true, by: 'rule', decider: 'remembered for the session: record_action' },
    ]);
    // Every decision says what it decided, the ones the remembered rule settled unasked too (the
    // run directory's approvals.jsonl records their arguments from it).
    expect(decisions.map((event) => event.request?.args)).toEqual(
      ['s1', 's2', 's3', 'again'].map((note) => ({ note })),
    );
  });

  it("'always allow' on a shell command the mode asked about approves its prefix, not every command", async () => {
    const shell = definition('shell');
    const { supervisor, journal } = start([shell]);
    const approvals = collect(supervisor, 'agent:approval');
    supervisor.on('agent:approval', (event) => {
      if (event.request.args.command === 'echo one') {
        void supervisor.approve(event.request.requestId, { remember: 'session' });
      } else void supervisor.deny(event.request.requestId, 'not that');
    });
    const handle = supervisor.spawn('shell', {
      task: planTask([
        { name: 'run_terminal_cmd', args: { command: 'echo one' } },
        { name: 'run_terminal_cmd', args: { command: 'echo two' } },
        { name: 'run_terminal_cmd', args: { command: 'rm -rf notes' } },
      ]),
    });
    expect(await handle.result).toMatchObject({ status: 'completed' });
    expect(approvals.map((event) => [event.request.args.command, event.request.rule])).toEqual([
      ['echo one', 'run_terminal_cmd(echo:*)'],
      ['rm -rf notes', 'run_terminal_cmd(rm:*)'],
    ]);
    expect(ofType(journal(handle.id), 'ApprovalDecided').map((e) => [e.by, e.approved])).toEqual([
      ['person', true],
      ['rule', true],
      ['person', false],
    ]);
  });

  it("'always allow' on a command asked with a masked secret approves that call only: another secret is asked about", async () => {
    const shell = definition('shell');
    const { supervisor, dir, journal } = start([shell]);
    const approvals = collect(supervisor, 'agent:approval');
    supervisor.on('agent:approval', (event) => {
      void supervisor.approve(event.request.requestId, { remember: 'session' });
    });
    // Two commands on one line: asked (and remembered) as written, the token masked in the rule.
    const line = (token: string) => `printf %s ghp_${token} >> got.txt && echo stored`;
    const first = 'Kx7Qm2Wv9Zr4Tn6Yb1Lp3Hs8';
    const second = 'Zq1Wd5Rt8Yp2Mn4Bv7Cx3Lk9';
    const handle = supervisor.spawn('shell', {
      task: planTask([
        { name: 'run_terminal_cmd', args: { command: line(first) } },
        { name: 'run_terminal_cmd', args: { command: line(second) } },
      ]),
    });
    expect(await handle.result).toMatchObject({ status: 'completed' });
    const masked = 'run_terminal_cmd(printf %s [REDACTED] >> got.txt && echo stored)';
    // The same masked rule both times, yet the second call (another secret) is asked about.
    expect(approvals.map((event) => event.request.rule)).toEqual([masked, masked]);
    expect(ofType(journal(handle.id), 'ApprovalDecided').map((e) => [e.by, e.remember])).toEqual([
      ['person', 'call'],
      ['person', 'call'],
    ]);
    expect(readFileSync(path.join(dir, 'got.txt'), 'utf8')).toBe(`ghp_${first}ghp_${second}`);
  });

  it('denies in dontAsk without an approval event, and says why', async () => {
    const strict = definition('strict', {
      permissionMode: 'dontAsk',
      permissions: { allow: ['Write(ok.txt)'], ask: [], deny: [] },
    });
    const { supervisor, dir, journal } = start([strict]);
    const approvals = collect(supervisor, 'agent:approval');
    const decisions = collect(supervisor, 'agent:decision');
    const handle = supervisor.spawn('strict', {
      task: planTask([
        { name: 'write_file', args: { path: 'ok.txt', content: 'fine' } },
        { name: 'write_file', args: { path: 'other.txt', content: 'no' } },
      ]),
    });
    const outcome = await handle.result;
    expect(approvals).toEqual([]);
    expect(outcome.status === 'completed' && outcome.answer).toBe(
      'last result: `write_file` was denied: permissionMode dontAsk denies file edits that no allow rule admits. It did not run. Do not retry it as is.',
    );
    expect(readFileSync(path.join(dir, 'ok.txt'), 'utf8')).toBe('fine');
    expect(existsSync(path.join(dir, 'other.txt'))).toBe(false);
    expect(decisions).toMatchObject([
      { requestId: undefined, tool: 'write_file', decision: { approved: false, by: 'policy' } },
    ]);
    expect(ofType(journal(handle.id), 'ApprovalRequested')).toEqual([]);
  });

  it('acceptEdits: edits inside the working directory run without asking, run_terminal_cmd asks', async () => {
    const editor = definition('editor', { permissionMode: 'acceptEdits' });
    const { supervisor, dir } = start([editor]);
    const approvals = collect(supervisor, 'agent:approval');
    supervisor.on('agent:approval', (event) => void supervisor.approve(event.request.requestId));
    const handle = supervisor.spawn('editor', {
      task: planTask([
        { name: 'write_file', args: { path: 'notes/a.txt', content: 'edited' } },
        { name: 'run_terminal_cmd', args: { command: 'cat notes/a.txt' } },
      ]),
    });
    expect(await handle.result).toMatchObject({ status: 'completed' });
    expect(readFileSync(path.join(dir, 'notes/a.txt'), 'utf8')).toBe('edited');
    expect(approvals.map((event) => [event.request.tool, event.request.args, event.request.reason])).toEqual([
      [
        'run_terminal_cmd',
        { command: 'cat notes/a.txt' },
        'permissionMode acceptEdits asks before shell commands other than mkdir, touch, mv, cp, rm, rmdir inside the working directory',
      ],
    ]);
  });

  it("asks when a tool's needsApproval says so, and only then", async () => {
    const { supervisor, actions } = start([worker]);
    const approvals = collect(supervisor, 'agent:approval');
    supervisor.on('agent:approval', (event) => void supervisor.approve(event.request.requestId));
    const handle = supervisor.spawn('worker', {
      task: planTask([
        { name: 'deploy', args: { target: 'staging' } },
        { name: 'deploy', args: { target: 'prod' } },
      ]),
    });
    expect(await handle.result).toMatchObject({
      status: 'completed',
      answer: 'last result: deployed to prod',
    });
    expect(approvals.map((event) => event.request.args)).toEqual([{ target: 'prod' }]);
    expect(actions().map(([, , target]) => target)).toEqual(['staging', 'prod']);
  });

  it('denies at once when nobody listens for approvals, unless told to wait', async () => {
    const { supervisor } = start([asker]);
    const decisions = collect(supervisor, 'agent:decision');
    const handle = supervisor.spawn('asker', {
      task: planTask([{ name: 'record_action', args: { note: 'x' } }]),
    });
    const outcome = await handle.result;
    expect(outcome.status === 'completed' && outcome.answer).toMatch(
      /^last result: `record_action` was denied: it needs a person's approval and nobody is there to give it \(nobody listens for approvals/,
    );
    expect(decisions.map((event) => event.decision.by)).toEqual(['unattended']);
  });

  it('refuses bypassPermissions unless the supervisor opts in, and then runs everything but deny rules', async () => {
    const reckless = definition('reckless', {
      permissionMode: 'bypassPermissions',
      permissions: { allow: [], ask: ['record_action'], deny: ['Write(*.lock)'] },
    });
    const refused = start([reckless]);
    const outcome = await refused.supervisor.spawn('reckless', { task: planTask([]) }).result;
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'bypass_not_allowed' },
    });

    const allowed = start([reckless], { permissions: { allowBypass: true } });
    const approvals = collect(allowed.supervisor, 'agent:approval');
    const handle = allowed.supervisor.spawn('reckless', {
      task: planTask([
        { name: 'record_action', args: { note: 'free' } },
        { name: 'write_file', args: { path: 'x.lock', content: '' } },
      ]),
    });
    const done = await handle.result;
    expect(approvals).toEqual([]);
    expect(allowed.actions().map(([, , note]) => note)).toEqual(['free']);
    expect(done.status === 'completed' && done.answer).toContain(
      'it matches `Write(*.lock)` in permissions.deny',
    );
  });

  it("adds the supervisor's rules and mode to every definition's", async () => {
    const { supervisor, dir } = start([worker], {
      permissions: { mode: 'acceptEdits', ask: ['Write(secret.txt)'] },
    });
    const approvals = collect(supervisor, 'agent:approval');
    supervisor.on(
      'agent:approval',
      (event: AgentApproval) => void supervisor.deny(event.request.requestId, 'keep out'),
    );
    const decisions: AgentDecision[] = collect(supervisor, 'agent:decision');
    const handle = supervisor.spawn('worker', {
      task: planTask([
        { name: 'write_file', args: { path: 'open.txt', content: '1' } },
        { name: 'write_file', args: { path: 'secret.txt', content: '2' } },
      ]),
    });
    await handle.result;
    expect(existsSync(path.join(dir, 'open.txt'))).toBe(true);
    expect(existsSync(path.join(dir, 'secret.txt'))).toBe(false);
    expect(approvals.map((event) => event.request.reason)).toEqual([
      "it matches `Write(secret.txt)` in the supervisor's permissions.ask",
    ]);
    expect(decisions.map((event) => event.decision.reason)).toEqual(['keep out']);
  });

  it('validates permission options with what was expected and found', () => {
    expect(() => new Supervisor({ permissions: { allow: ['Bash(oops'] } })).toThrow(
      /`permissions\.allow\[0\]`: Cannot read the tool rule `Bash\(oops`/,
    );
    expect(() => new Supervisor({ permissions: { mode: 'yolo' as never } })).toThrow(/permissions\.mode/);
    expect(() => new Supervisor({ approvals: { timeoutMs: -1 } })).toThrow(/approvals\.timeoutMs/);
    // Past the longest timer delay Node fires at once: every approval timed out at once.
    expect(() => new Supervisor({ approvals: { timeoutMs: 2 ** 31 } })).toThrow(
      expect.objectContaining({
        code: 'invalid_option',
        message:
          'Expected `approvals.timeoutMs` to be a non-negative number up to 2147483647, got `2147483648` (number)',
        fields: { option: 'approvals.timeoutMs' },
      }),
    );
  });
});
