import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import {
  approvalChannel,
  approvalPrompt,
  commandApprover,
  type JobControl,
  type KeyInput,
  sessionApprover,
} from '../../../src/cli/shared/approvers.ts';
import { type ApprovalRequest, NOT_REMEMBERABLE } from '../../../src/protocol/approvals.ts';
import type { ApprovalAnswer } from '../../../src/run-dir/session-approvals.ts';
import { savedEnv } from '../../fixtures/cli/cli-helpers.ts';

/** A terminal that records raw mode and lets the test type keys. */
class FakeTerminal implements KeyInput {
  readonly isTTY = true;
  raw = false;
  reading = false;
  readonly #listeners = new Set<(chunk: Buffer | string) => void>();

  setRawMode(mode: boolean): void {
    this.raw = mode;
  }
  on(_event: 'data', listener: (chunk: Buffer | string) => void): void {
    this.#listeners.add(listener);
  }
  off(_event: 'data', listener: (chunk: Buffer | string) => void): void {
    this.#listeners.delete(listener);
  }
  resume(): void {
    this.reading = true;
  }
  pause(): void {
    this.reading = false;
  }
  type(keys: string): void {
    for (const listener of [...this.#listeners]) listener(keys);
  }
  get listening(): boolean {
    return this.#listeners.size > 0;
  }
}

function request(requestId: string, rule: string, toolArgs: Record<string, unknown> = {}): ApprovalRequest {
  return {
    requestId,
    agentId: 'agent-1',
    callId: `call-${requestId}`,
    tool: 'run_terminal_cmd',
    modelName: 'run_terminal_cmd',
    args: toolArgs,
    toolArgs,
    argsHash: 'hash',
    rule,
    reason: 'why',
    deadline: null,
    requestedAt: new Date(0).toISOString(),
  };
}

/** Job control that records what the approver asked of the process; `fg` sends SIGCONT. */
function fakeJobs() {
  const signals = new EventEmitter();
  const done: string[] = [];
  const jobs: JobControl = {
    signals,
    suspend: () => done.push('SIGTSTP'),
    quit: () => done.push('SIGQUIT'),
  };
  return { jobs, done, fg: () => signals.emit('SIGCONT'), listeners: () => signals.listenerCount('SIGCONT') };
}

function answers() {
  const got: [string, ApprovalAnswer][] = [];
  return { got, to: (id: string) => (answer: ApprovalAnswer) => got.push([id, answer]) };
}

describe('the terminal approver', () => {
  it('answers the oldest request per key, reads the terminal in raw mode only while requests wait', () => {
    const terminal = new FakeTerminal();
    const announced: string[] = [];
    const approver = commandApprover({
      approve: [],
      cwd: '/tmp',
      input: terminal,
      interrupt: () => {},
      announce: (r) => announced.push(r.requestId),
    });
    const { got, to } = answers();
    expect(terminal.raw).toBe(false);
    approver.ask(request('r1', 'Bash(git push:*)'), to('r1'));
    approver.ask(request('r2', 'Bash(rm:*)'), to('r2'));
    expect(terminal.raw).toBe(true);
    expect(terminal.reading).toBe(true);
    expect(announced).toEqual(['r1']);

    terminal.type('x'); // not an answer
    expect(got).toEqual([]);
    terminal.type('y');
    expect(got).toEqual([['r1', { approved: true, by: 'person', decider: 'tty', remember: 'call' }]]);
    expect(announced).toEqual(['r1', 'r2']);
    terminal.type('N');
    expect(got[1]).toEqual([
      'r2',
      { approved: false, by: 'person', decider: 'tty', reason: 'denied at the terminal' },
    ]);
    expect(terminal.raw).toBe(false);
    expect(terminal.listening).toBe(false);
    expect(terminal.reading).toBe(false);
  });

  it("`a` approves for the session and drops the rule's other waiting requests; Ctrl-C interrupts", () => {
    const terminal = new FakeTerminal();
    let interrupts = 0;
    const approver = commandApprover({
      approve: [],
      cwd: '/tmp',
      input: terminal,
      interrupt: () => {
        interrupts += 1;
      },
    });
    const { got, to } = answers();
    approver.ask(request('r1', 'Bash(git push:*)'), to('r1'));
    approver.ask(request('r2', 'Bash(git push:*)'), to('r2'));
    approver.ask(request('r3', 'Bash(rm:*)'), to('r3'));
    terminal.type('\u0003');
    expect(interrupts).toBe(1);
    terminal.type('a');
    // r2 has the same rule: approved with it, not asked about.
    expect(got).toEqual([
      ['r1', { approved: true, by: 'person', decider: 'tty', remember: 'session' }],
      [
        'r2',
        {
          approved: true,
          by: 'rule',
          decider: 'remembered for the session: Bash(git push:*)',
          remember: 'session',
        },
      ],
    ]);
    terminal.type('n');
    expect(got.map(([id, answer]) => [id, answer.approved])).toEqual([
      ['r1', true],
      ['r2', true],
      ['r3', false],
    ]);
    expect(terminal.raw).toBe(false);
  });

  it('a forgotten request (decided elsewhere, timed out) is not answered by the next key', () => {
    const terminal = new FakeTerminal();
    const approver = commandApprover({ approve: [], cwd: '/tmp', input: terminal, interrupt: () => {} });
    const { got, to } = answers();
    approver.ask(request('r1', 'Bash'), to('r1'));
    approver.ask(request('r2', 'Bash'), to('r2'));
    approver.forget('r1');
    terminal.type('y');
    expect(got.map(([id]) => id)).toEqual(['r2']);
    approver.close();
    expect(terminal.raw).toBe(false);
  });

  it('off a terminal every request is denied; --approve rules approve what they allow', async () => {
    const approver = commandApprover({
      approve: ['Bash(npm test:*)'],
      cwd: '/tmp',
      input: undefined,
      interrupt: () => {},
    });
    const decide = (r: ApprovalRequest): Promise<ApprovalAnswer> =>
      new Promise((resolve) => approver.ask(r, resolve));
    expect(await decide(request('r1', 'Bash', { command: 'npm test -- --run' }))).toEqual({
      approved: true,
      by: 'rule',
      decider: '--approve Bash(npm test:*)',
    });
    // allow semantics: every part of the command must be allowed.
    expect(await decide(request('r2', 'Bash', { command: 'npm test && git push' }))).toMatchObject({
      approved: false,
      by: 'rule',
      decider: 'no terminal',
    });
  });

  it("troupe run's channel remembers a rule approved with `a` for the rest of the run", async () => {
    const terminal = new FakeTerminal();
    const approver = commandApprover({ approve: [], cwd: '/tmp', input: terminal, interrupt: () => {} });
    const channel = approvalChannel(approver);
    const signal = new AbortController().signal;
    const first = channel(request('r1', 'Bash(git push:*)'), signal);
    terminal.type('a');
    expect(await first).toMatchObject({ approved: true, remember: 'session', by: 'person' });
    expect(await channel(request('r2', 'Bash(git push:*)'), signal)).toMatchObject({
      approved: true,
      by: 'rule',
    });
    expect(terminal.listening).toBe(false);
    // An aborted wait (the run was cancelled) resolves with no decision and stops reading keys.
    const controller = new AbortController();
    const third = channel(request('r3', 'Bash(rm:*)'), controller.signal);
    expect(terminal.listening).toBe(true);
    controller.abort();
    expect(await third).toBeNull();
    expect(terminal.listening).toBe(false);
  });
});

describe('a request whose rule holds a masked secret', () => {
  const masked = 'run_terminal_cmd(printf %s [REDACTED] > got.txt && echo stored)';

  it('`a` approves that call only: the same masked rule with another secret is asked again', async () => {
    const terminal = new FakeTerminal();
    const approver = commandApprover({ approve: [], cwd: '/tmp', input: terminal, interrupt: () => {} });
    const { got, to } = answers();
    approver.ask(request('r1', masked), to('r1'));
    approver.ask(request('r2', masked), to('r2'));
    terminal.type('a');
    // r2 may hold another secret behind the same mask: not approved with r1, still asked.
    expect(got).toEqual([['r1', { approved: true, by: 'person', decider: 'tty', remember: 'call' }]]);
    terminal.type('n');
    expect(got.map(([id, answer]) => [id, answer.approved])).toEqual([
      ['r1', true],
      ['r2', false],
    ]);
    // troupe run's channel does not remember it either.
    const channel = approvalChannel(approver);
    const signal = new AbortController().signal;
    const first = channel(request('r3', masked), signal);
    terminal.type('a');
    expect(await first).toMatchObject({ approved: true, remember: 'call', by: 'person' });
    const second = channel(request('r4', masked), signal);
    expect(terminal.listening).toBe(true);
    terminal.type('n');
    expect(await second).toMatchObject({ approved: false, by: 'person' });
  });

  it('is shown without the `a` key, and says why', () => {
    expect(approvalPrompt(request('r1', masked, { command: 'x' }))).toBe(
      `approval needed: run_terminal_cmd {"command":"x"} (why)\n  [y] approve  [n] deny  (no [a]: ${NOT_REMEMBERABLE})`,
    );
  });
});

describe("a fan-out's approver under TERM=dumb", () => {
  it('prints the keys with each request, as the plain lines it gets have no prompt', () => {
    const restoreEnv = savedEnv(['TERM']);
    try {
      const shown: Record<string, string> = {};
      for (const term of ['dumb', 'xterm-256color']) {
        process.env.TERM = term;
        let printed = '';
        const terminal = new FakeTerminal();
        const approver = sessionApprover([], '/tmp', false, {
          input: terminal,
          write: (text) => {
            printed += text;
          },
        });
        const { got, to } = answers();
        approver.ask(request('r1', 'Bash(git push:*)', { command: 'git push' }), to('r1'));
        terminal.type('y');
        expect(got).toHaveLength(1);
        shown[term] = printed;
      }
      expect(shown.dumb).toBe(
        'approval needed: run_terminal_cmd {"command":"git push"} (why)\n  [y] approve  [n] deny  [a] always allow `Bash(git push:*)` this session\n',
      );
      expect(shown['xterm-256color']).toBe('');
    } finally {
      restoreEnv();
    }
  });
});

describe('signal keys while the approver holds the terminal in raw mode', () => {
  it('Ctrl-Z gives the terminal back and stops the process; fg takes raw mode again and shows the request again', () => {
    const terminal = new FakeTerminal();
    const { jobs, done, fg, listeners } = fakeJobs();
    const announced: string[] = [];
    const approver = commandApprover({
      approve: [],
      cwd: '/tmp',
      input: terminal,
      interrupt: () => {},
      announce: (r) => announced.push(r.requestId),
      jobControl: jobs,
    });
    const { got, to } = answers();
    approver.ask(request('r1', 'Bash(git push:*)'), to('r1'));
    expect(terminal.raw).toBe(true);

    terminal.type('\u001ay'); // the `y` was typed before the stop took effect: dropped
    expect(done).toEqual(['SIGTSTP']);
    expect(terminal.raw).toBe(false);
    expect(got).toEqual([]);

    fg();
    expect(terminal.raw).toBe(true);
    expect(announced).toEqual(['r1', 'r1']);
    expect(listeners()).toBe(0);
    terminal.type('y');
    expect(got).toEqual([['r1', { approved: true, by: 'person', decider: 'tty', remember: 'call' }]]);
    expect(terminal.raw).toBe(false);
  });

  it('a request answered elsewhere while stopped: fg leaves the terminal alone and no SIGCONT listener stays', () => {
    const terminal = new FakeTerminal();
    const { jobs, done, fg, listeners } = fakeJobs();
    const announced: string[] = [];
    const approver = commandApprover({
      approve: [],
      cwd: '/tmp',
      input: terminal,
      interrupt: () => {},
      announce: (r) => announced.push(r.requestId),
      jobControl: jobs,
    });
    approver.ask(request('r1', 'Bash(rm:*)'), answers().to('r1'));
    terminal.type('\u001a');
    expect(done).toEqual(['SIGTSTP']);
    approver.forget('r1');
    expect(listeners()).toBe(0);
    fg();
    expect(terminal.raw).toBe(false);
    expect(announced).toEqual(['r1']);
  });

  it('Ctrl-\\ gives the terminal back and quits; without job control (Windows) both keys are ignored', () => {
    const terminal = new FakeTerminal();
    const { jobs, done } = fakeJobs();
    const approver = commandApprover({
      approve: [],
      cwd: '/tmp',
      input: terminal,
      interrupt: () => {},
      jobControl: jobs,
    });
    approver.ask(request('r1', 'Bash(rm:*)'), answers().to('r1'));
    terminal.type('\u001c');
    expect(done).toEqual(['SIGQUIT']);
    expect(terminal.raw).toBe(false);
    expect(terminal.listening).toBe(false);

    const windows = new FakeTerminal();
    const { got, to } = answers();
    const plain = commandApprover({
      approve: [],
      cwd: '/tmp',
      input: windows,
      interrupt: () => {},
      jobControl: undefined,
    });
    plain.ask(request('r2', 'Bash(rm:*)'), to('r2'));
    windows.type('\u001a\u001cn');
    expect(windows.raw).toBe(false);
    expect(got).toMatchObject([['r2', { approved: false }]]);
  });
});
