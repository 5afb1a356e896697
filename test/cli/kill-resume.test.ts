/**
 * The agent loop's done-means: an agent killed mid-run resumes from its journal in a new process,
 * completes, runs no tool call twice, and leaves a journal `troupe verify` accepts. Children are
 * stopped at exact places, never after a delay: a FIFO with no writer blocks the real CLI inside
 * `read_file`, and the fixture runner blocks its thread right after a chosen event; the test waits
 * for the child's own output saying it got there.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareResume } from '../../src/cli/shared/session.ts';
import { INTERRUPTED_TOOL_RESULT } from '../../src/journal/constants.ts';
import type { AuditEvent, EventOf } from '../../src/journal/events.ts';
import type { AgentOutcome } from '../../src/loop/types.ts';
import {
  type Child,
  completeLines,
  journalEvents,
  PROVIDER_ENV,
  Project,
  runCli,
  spawnFixture,
  spawnTroupe,
} from '../fixtures/cli/cli-helpers.ts';
import { CallTracker, readEffects, recordingRegistry } from '../fixtures/cli/recording-tools.ts';

const posix = process.platform !== 'win32';

let project: Project;
let saved: Record<string, string | undefined>;

beforeEach(() => {
  project = new Project({ 'a.md': 'alpha\n', 'b.md': 'beta\n', 'c.md': 'gamma\n' });
  saved = Object.fromEntries(['HOME', ...PROVIDER_ENV].map((name) => [name, process.env[name]]));
  for (const name of PROVIDER_ENV) delete process.env[name];
  process.env.HOME = project.home;
});

afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  project.remove();
});

function ofType<T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T): EventOf<T>[] {
  return events.filter((event): event is EventOf<T> => event.type === type);
}

/** Replaces `name` with a FIFO nobody writes to: reading it blocks until the process dies. */
function makeFifo(name: string): string {
  const path = project.path(name);
  rmSync(path, { force: true });
  const made = spawnSync('mkfifo', [path]);
  if (made.status !== 0) throw new Error(`mkfifo failed: ${String(made.stderr)}`);
  return path;
}

/** The `--json` line of the ToolCall journalled just before a read of `path` runs. */
function readStarted(path: string): (child: Child) => boolean {
  return (child) =>
    child.stdout
      .split('\n')
      .some((line) => line.includes('"type":"ToolCall"') && line.includes(`"args":{"path":"${path}"}`));
}

/**
 * Resolves once a thread of process `pid` is blocked opening a FIFO (on Linux its `wchan` reads
 * `wait_for_partner`): the tool is inside its read, and with no writer it stays there. Watching
 * the kernel keeps the FIFO writerless; opening a write end to probe it would let the read go on.
 * Where /proc is missing it resolves at once, as the ToolCall line is already out.
 */
async function untilBlockedOnFifo(child: Child): Promise<void> {
  const pid = child.process.pid;
  const tasks = `/proc/${pid}/task`;
  if (pid === undefined || !existsSync(tasks)) return;
  const seen = new Set<string>();
  // Bounded by polls, not by time: a hang must fail here, with what the threads were doing.
  for (let poll = 0; poll < 2000; poll += 1) {
    if (child.process.exitCode !== null || child.process.signalCode !== null) break;
    let names: string[] = [];
    try {
      names = readdirSync(tasks);
    } catch {
      break;
    }
    for (const tid of names) {
      try {
        const wchan = readFileSync(`${tasks}/${tid}/wchan`, 'utf8').trim();
        if (wchan === 'wait_for_partner') return;
        seen.add(wchan);
      } catch {
        // The thread ended between the listing and the read.
      }
    }
    await delay(10);
  }
  throw new Error(
    `process ${pid} never blocked opening the FIFO (threads seen in: ${[...seen].join(', ')})\n` +
      `stdout:\n${child.stdout}\nstderr:\n${child.stderr}`,
  );
}

/** Checks what resume promises about tool calls, from the journal alone. */
function expectEachCallOnce(events: readonly AuditEvent[]): void {
  const calls = ofType(events, 'ToolCall');
  const results = ofType(events, 'ToolResult');
  expect(new Set(calls.map((call) => call.callId)).size).toBe(calls.length);
  expect(results.map((result) => result.callId).sort()).toEqual(calls.map((call) => call.callId).sort());
  expect(events.filter((event) => event.type === 'Completed' || event.type === 'Failed')).toHaveLength(1);
  expect(events.at(-1)?.type).toBe('Completed');
}

describe('troupe run killed with SIGKILL, then troupe resume in a new process', () => {
  it.runIf(posix)(
    'the agent completes, the cut-off call is recorded as interrupted, nothing runs twice, and verify passes',
    async () => {
      const fifo = makeFifo('b.md');
      const journal = project.path('run.jsonl');
      // troupe run --json's code (executeLive) with a read that blocks on the FIFO: the built-in
      // read_file refuses a FIFO at once, and its result could be journalled before the kill.
      const run = spawnFixture(project, [
        'live',
        ...['--cwd', project.root, '--journal', journal, '--effects', project.path('effects.jsonl')],
        ...['--agent', 'reader', '--task', 'Read a.md, b.md and c.md'],
      ]);
      await run.until(readStarted('b.md'));
      await untilBlockedOnFifo(run);
      run.process.kill('SIGKILL');
      expect(await run.exited).toMatchObject({ signal: 'SIGKILL' });

      const killed = journalEvents(journal);
      expect(killed.length).toBe(completeLines(journal));
      expect(killed.at(-1)).toMatchObject({ type: 'ToolCall', args: { path: 'b.md' } });
      const cutOff = ofType(killed, 'ToolCall').find((call) => call.args?.path === 'b.md');
      expect(cutOff).toBeDefined();
      // A regular file again: a read wrongly repeated by the resume would now finish and show up.
      rmSync(fifo);
      writeFileSync(fifo, 'beta\n');

      const resume = spawnTroupe(project, ['resume', journal, '--json']);
      expect(await resume.exited).toMatchObject({ code: 0 });
      const lines = resume.stdout.trimEnd().split('\n');
      expect(JSON.parse(lines[0] ?? '')).toMatchObject({ type: 'Run', command: 'resume', simulated: true });
      expect(JSON.parse(lines.at(-1) ?? '')).toMatchObject({ type: 'Outcome', status: 'completed' });

      const events = journalEvents(journal);
      expect(events.slice(0, killed.length)).toEqual(killed);
      expect(ofType(events, 'Resumed')).toEqual([
        expect.objectContaining({ pendingCallIds: [cutOff?.callId], truncatedBytes: 0 }),
      ]);
      expect(ofType(events, 'ToolResult').find((result) => result.callId === cutOff?.callId)).toMatchObject({
        ok: false,
        text: INTERRUPTED_TOOL_RESULT,
      });
      const reads = ofType(events, 'ToolCall').filter((call) => call.name === 'read_file');
      expect(reads.map((call) => call.args?.path)).toEqual(['a.md', 'b.md', 'c.md']);
      expectEachCallOnce(events);

      const verify = spawnTroupe(project, ['verify', journal]);
      expect(await verify.exited).toMatchObject({ code: 0 });
      expect(verify.stdout).toMatch(
        /^ok: \d+ events, \d+ model requests in 2 rounds verified\nthe agent completed\n$/,
      );
    },
  );
});

describe('Ctrl-C during troupe run', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)(
    'the first %s cancels the agent: it ends Failed(cancelled), journalled, exit %i',
    async (signal, exitCode) => {
      // A model server that takes the request and never answers: the run waits on the provider.
      let requested: () => void = () => {};
      const request = new Promise<void>((resolve) => {
        requested = resolve;
      });
      const server = createServer(() => requested());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as AddressInfo;
        const journal = project.path('run.jsonl');
        const run = spawnTroupe(project, ['run', 'reader', '--task', 'Read a.md', '--journal', journal], {
          OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
        });
        await request;
        run.process.kill(signal);
        expect(await run.exited).toMatchObject({ code: exitCode });
        expect(run.stderr).toContain('provider: openai (OPENAI_BASE_URL is set)');
        expect(run.stderr).toContain('interrupted: cancelling the agent');
        expect(run.stderr).toMatch(/reason: cancelled · code: cancelled · /);
        const events = journalEvents(journal);
        expect(events.at(-1)).toMatchObject({ type: 'Failed', reason: 'cancelled' });
        expect((await runCli('verify', journal)).code).toBe(0);
      } finally {
        server.closeAllConnections();
        server.close();
      }
    },
  );

  it.runIf(posix)(
    'a tool that ignores the abort does not hold the first Ctrl-C; the second exits at once',
    async () => {
      const fifo = makeFifo('b.md');
      const journal = project.path('run.jsonl');
      // troupe run --json's code (executeLive), with a read_file that ignores the abort: the
      // built-in refuses a FIFO since it could block a thread no signal reaches.
      const run = spawnFixture(project, [
        'live',
        ...['--cwd', project.root, '--journal', journal, '--effects', project.path('effects.jsonl')],
        ...['--agent', 'reader', '--task', 'Read a.md and b.md'],
      ]);
      await run.until(readStarted('b.md'));
      // The ToolCall is journalled just before the tool runs: wait until the read really blocks.
      await untilBlockedOnFifo(run);
      run.process.kill('SIGINT');
      // The read of b.md blocks on a FIFO with no writer and ignores the abort; the loop stops
      // waiting for it and the agent ends cancelled, journalled.
      await run.until((child) => child.stdout.includes('"type":"Failed"'));
      expect(journalEvents(journal).at(-1)).toMatchObject({ type: 'Failed', reason: 'cancelled' });
      expect(
        journalEvents(journal).find((e) => e.type === 'ToolResult' && e.text === 'read_file was cancelled'),
      ).toBeDefined();
      // The blocked read still keeps the process alive: the second Ctrl-C exits at once.
      run.process.kill('SIGINT');
      expect(await run.exitedOrStuck(), run.stderr).toMatchObject({ signal: 'SIGINT' });
      rmSync(fifo);
      expect((await runCli('verify', journal)).code).toBe(0);
    },
  );
});

interface KillPoint {
  readonly name: string;
  /** Where run-with-tool.ts hangs. */
  readonly hang: readonly string[];
  /** The last journalled event when it hangs. */
  readonly last: AuditEvent['type'];
}

const TASK = 'Read a.md, b.md and c.md';

/** Runs the fixture until it hangs at `point`, SIGKILLs it, and returns the journal and effects files. */
async function killAt(point: KillPoint) {
  const journal = project.path('run.jsonl');
  const effects = project.path('effects.jsonl');
  const child = spawnFixture(project, [
    'run',
    ...['--cwd', project.root, '--journal', journal, '--effects', effects],
    ...['--agent', 'reader', '--task', TASK],
    ...point.hang,
  ]);
  await child.until((c) => c.stdout.includes('hanging\n'));
  child.process.kill('SIGKILL');
  expect(await child.exited).toMatchObject({ signal: 'SIGKILL' });
  const killed = journalEvents(journal);
  expect(killed.at(-1)?.type).toBe(point.last);
  expect(killed.length).toBe(completeLines(journal));
  return { journal, effects, killed };
}

/** Resumes in this process (a new one to the killed child) with the same recording tools. */
async function resumeHere(journal: string, effects: string): Promise<AgentOutcome> {
  const tracker = new CallTracker();
  const session = await prepareResume({
    journal,
    env: { HOME: project.home },
    registry: recordingRegistry(effects, tracker),
  });
  return session.execute({ onEvent: (event) => tracker.observe(event) });
}

/** No read ran twice: one effect per executed call, none for a call that never ran. */
function expectNoRepeatedEffects(journal: string, effects: string): void {
  const events = journalEvents(journal);
  const done = readEffects(effects);
  const ran = done.map((effect) => effect.callId);
  expect(new Set(ran).size, `effects: ${JSON.stringify(done)}`).toBe(ran.length);
  expect(new Set(done.map((effect) => effect.path)).size).toBe(done.length);
  const reads = ofType(events, 'ToolCall').filter((call) => call.name === 'read_file');
  for (const id of ran) expect(reads.map((call) => call.callId)).toContain(id);
  for (const result of ofType(events, 'ToolResult')) {
    if (result.name !== 'read_file' || result.refused || result.text === INTERRUPTED_TOOL_RESULT) continue;
    expect(ran).toContain(result.callId);
  }
  expectEachCallOnce(events);
}

// Every cut point is covered in-process by test/loop/resume-kill-points.test.ts; these run in a
// real process, killed for real, at the points where durability and side effects matter most.
const KILL_POINTS: readonly KillPoint[] = [
  {
    name: 'after a ToolCall was journalled, before the tool ran',
    hang: ['--hang-after', 'ToolCall:2'],
    last: 'ToolCall',
  },
  {
    name: 'after the complete_task result, before Completed',
    hang: ['--hang-after', 'ToolResult:4'],
    last: 'ToolResult',
  },
];

describe('an agent with a side-effecting tool, SIGKILLed at exact points and resumed', () => {
  it.runIf(posix)(
    'killed inside a tool after its side effect: resumed in a new process, the call is not run again',
    async () => {
      const { journal, effects } = await killAt({
        name: 'inside the second read_file',
        hang: ['--hang-in-call', '2'],
        last: 'ToolCall',
      });
      expect(readEffects(effects).map((effect) => effect.path)).toEqual(['a.md', 'b.md']);

      const resume = spawnFixture(project, ['resume', '--journal', journal, '--effects', effects]);
      expect(await resume.exited, resume.stderr).toMatchObject({ code: 0 });
      expect(JSON.parse(resume.stdout)).toMatchObject({ status: 'completed' });
      const events = journalEvents(journal);
      const b = ofType(events, 'ToolCall').find((call) => call.args?.path === 'b.md');
      expect(ofType(events, 'ToolResult').find((result) => result.callId === b?.callId)?.text).toBe(
        INTERRUPTED_TOOL_RESULT,
      );
      expect(readEffects(effects).map((effect) => effect.path)).toEqual(['a.md', 'b.md', 'c.md']);
      expectNoRepeatedEffects(journal, effects);
      expect((await runCli('verify', journal)).code).toBe(0);
    },
  );

  for (const point of KILL_POINTS) {
    it.runIf(posix)(`killed ${point.name}: completes, nothing runs twice, verify passes`, async () => {
      const { journal, effects } = await killAt(point);
      const outcome = await resumeHere(journal, effects);
      expect(outcome.status).toBe('completed');
      expectNoRepeatedEffects(journal, effects);
      const verified = await runCli('verify', journal);
      expect(verified.stdout).toMatch(/^ok: /);
      expect(verified.code).toBe(0);
    });
  }

  // The process dies after a ToolResult is journalled but before its history entry: resume
  // re-adds the entry from the journal, so the model sees the result and the call is not re-run.
  it.runIf(posix)(
    'killed after a ToolResult, before its history entry: the call is not run again',
    async () => {
      const { journal, effects } = await killAt({
        name: 'after the second ToolResult',
        hang: ['--hang-after', 'ToolResult:2'],
        last: 'ToolResult',
      });
      const outcome = await resumeHere(journal, effects);
      expect(outcome.status).toBe('completed');
      expectNoRepeatedEffects(journal, effects);
    },
  );
});
