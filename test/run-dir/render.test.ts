import { describe, expect, it, vi } from 'vitest';
import { createProgressRenderer } from '../../src/run-dir/render-progress.ts';
import type { ResultLine } from '../../src/run-dir/results.ts';
import type { RunEvent } from '../../src/run-dir/run-events.ts';

const USAGE = { inputTokens: 1200, outputTokens: 30, cachedInputTokens: 0, reasoningTokens: 0 };

const ended: ResultLine = {
  index: 0,
  agentId: 'abc-0',
  parentId: null,
  agent: 'worker',
  attempt: 1,
  status: 'completed',
  result: { summary: 'all good' },
  answer: '{"summary":"all good"}',
  usage: USAGE,
  costUsd: 0.0123,
  rounds: 2,
  hostId: 0,
  restarts: 0,
  startedAt: '2025-01-01T00:00:00.000Z',
  endedAt: '2025-01-01T00:00:01.000Z',
};

const events: RunEvent[] = [
  {
    type: 'run',
    runId: 'r1',
    runDir: '/tmp/runs/r1',
    kind: 'fanout',
    provider: 'simulated',
    model: 'simulated',
    simulated: true,
    notice: 'using the simulated model: canned answers',
    planned: 3,
    toRun: 3,
    threads: 2,
    engine: { backend: 'threads', threads: 2 },
    concurrency: 2,
    runLimits: { maxTotalTokens: 10_000_000, maxCostUsd: 0 },
    usedTokens: 0,
    notices: [],
  },
  { type: 'spawned', agentId: 'abc-0', index: 0, agent: 'worker', parentId: null, task: 'a' },
  { type: 'spawned', agentId: 'abc-1', index: 1, agent: 'worker', parentId: null, task: 'b' },
  { type: 'started', agentId: 'abc-0', index: 0, agent: 'worker', hostId: 0, resumed: false },
  { type: 'started', agentId: 'abc-1', index: 1, agent: 'worker', hostId: 1, resumed: false },
  { type: 'tool', agentId: 'abc-1', index: 1, agent: 'worker', round: 1, tool: 'read_file', ok: undefined },
  { type: 'tool', agentId: 'abc-1', index: 1, agent: 'worker', round: 1, tool: 'read_file', ok: true },
  {
    type: 'usage',
    agentId: 'abc-0',
    index: 0,
    agent: 'worker',
    inputTokens: 1200,
    outputTokens: 30,
    estimated: false,
    costUsd: 0.0123,
  },
  { type: 'ended', line: ended },
];

const ESC = '\u001b';

function stripAnsi(text: string): string {
  return text.replace(new RegExp(`${ESC}\\[[0-9;]*[A-Za-z]`, 'g'), '');
}

function render(mode: 'json' | 'tty' | 'plain', from: readonly RunEvent[] = events): string {
  let out = '';
  let now = 1_000;
  const renderer = createProgressRenderer(mode, {
    write: (text) => {
      out += text;
    },
    columns: () => 80,
    now: () => {
      now += 100;
      return now;
    },
  });
  for (const event of from) renderer.onEvent(event);
  renderer.note('a note');
  renderer.stop();
  return out;
}

describe('progress renderers', () => {
  it('plain output is one line per event that matters, headed by the simulated-model notice', () => {
    const lines = render('plain').trimEnd().split('\n');
    expect(lines.slice(0, 4)).toEqual([
      'troupe fanout: run r1: 3 agent(s), 2 at a time on 2 thread(s), provider simulated (model simulated)',
      'troupe: using the simulated model: canned answers',
      'budget: 10.0M tokens · no cost limit',
      'run dir: /tmp/runs/r1',
    ]);
    expect(lines.slice(4).map((line) => line.replace(/^\+\S+\s+/, ''))).toEqual([
      'started    abc-0 worker on thread 0',
      'started    abc-1 worker on thread 1',
      'tool       abc-1 read_file ok',
      'completed  abc-0 worker: all good (2 round(s), 1.2k tokens, $0.0123)',
      'a note',
    ]);
  });

  it('counts queued agents cancelled before they started in one line instead of one line each', () => {
    // A Ctrl-C 2,000 items into a 20,000-item data set printed 18,000 `failed ... cancelled` lines
    // (and took seconds to measure and write them) before the closing summary.
    const neverStarted = (index: number): RunEvent => ({
      type: 'ended',
      line: {
        ...ended,
        index,
        agentId: `abc-${index}`,
        status: 'failed',
        reason: 'cancelled',
        error: {
          name: 'SystemError',
          code: 'cancelled',
          message: 'Cancelled: interrupted (Ctrl-C)',
          fields: {},
        },
        result: undefined,
        answer: undefined,
        usage: { ...USAGE, inputTokens: 0, outputTokens: 0 },
        costUsd: 0,
        rounds: 0,
        hostId: null,
        startedAt: null,
      },
    });
    const cancelled = [...events, neverStarted(1), neverStarted(2), neverStarted(3)];
    for (const mode of ['plain', 'tty'] as const) {
      const lines = stripAnsi(render(mode, cancelled)).split('\n');
      expect(
        lines.filter((line) => line.includes('Cancelled: interrupted')),
        mode,
      ).toEqual([]);
      expect(
        lines.filter((line) => line.includes('3 queued agent(s)')),
        mode,
      ).toEqual([
        expect.stringMatching(
          /cancelled +3 queued agent\(s\) before they started \(each has its line in result/,
        ),
      ]);
    }
  });

  it('on the redis engine the header names the queue, the server and the workers connected, and notices show', () => {
    const [run] = events;
    if (run?.type !== 'run') throw new Error('the first event is the header');
    const redis: RunEvent = {
      ...run,
      engine: { backend: 'redis', url: 'redis://host:6379', queue: 'q1', prefix: 'troupe', workers: 0 },
    };
    const notice: RunEvent = { type: 'notice', text: "no worker has taken this run's agents for 5 s" };
    const lines = render('plain', [redis, notice]).trimEnd().split('\n');
    expect(lines[0]).toBe(
      'troupe fanout: run r1: 3 agent(s), 2 at a time on redis (queue q1 at redis://host:6379, 0 worker(s) connected), provider simulated (model simulated)',
    );
    expect(lines.at(-2)?.replace(/^\+\S+\s+/, '')).toBe(
      "troupe: no worker has taken this run's agents for 5 s",
    );
    expect(stripAnsi(render('tty', [redis, notice]))).toContain(
      "! troupe: no worker has taken this run's agents",
    );
  });

  it('--json output is one JSON object per event, with its time', () => {
    const lines = render('json')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; time: string });
    expect(lines.map((line) => line.type)).toEqual([...events.map((event) => event.type), 'note']);
    expect(lines.every((line) => !Number.isNaN(Date.parse(line.time)))).toBe(true);
  });

  it('the TTY display redraws a status block in place with counts, totals and the busiest agents', () => {
    const out = render('tty');
    const plain = stripAnsi(out);
    expect(plain).toContain('1/3  done 1  failed 0  running 1  queued 1');
    expect(plain).toContain('[simulated model]  tokens 1.2k in / 30 out (1.2k of 10.0M)  cost $0.0123');
    expect(plain).toContain('abc-1 worker: read_file ok');
    expect(plain).toContain('✔ abc-0 worker: all good');
    expect(plain).toContain('troupe: using the simulated model: canned answers');
    // The second frame moves back over the first one and clears it before drawing.
    expect(out).toMatch(new RegExp(`\r${ESC}\\[\\d+A${ESC}\\[0J`));
    // Lines of the redrawn block must not wrap, or moving back over them would miss some.
    const lastFrame = stripAnsi(out.split(`${ESC}[0J`).at(-1) ?? '');
    for (const line of lastFrame.split('\n').slice(-4)) expect(line.length).toBeLessThanOrEqual(80);
  });

  it('once Ctrl-C or a spent budget stops the run, the TTY block counts the entries left as not run, not queued', () => {
    // They are no longer spawned only to be cancelled: they stay unstarted, and `queued` read as
    // if they were still to run.
    for (const stop of [
      { type: 'interrupt', count: 1 },
      { type: 'budget', code: 'run_token_budget', message: 'spent' },
    ] satisfies RunEvent[]) {
      const plain = stripAnsi(render('tty', [...events, stop]));
      const lastFrame = plain
        .split('\n')
        .filter((line) => line.includes('done 1'))
        .at(-1);
      expect(lastFrame).toContain('1/3  done 1  failed 0  running 1  not run 1');
    }
  });

  it('after a Ctrl-C the last TTY frame says the run was cancelled and how to resume, with no ETA or prompt', () => {
    const cancelled: ResultLine = {
      ...ended,
      agentId: 'abc-1',
      index: 1,
      status: 'failed',
      reason: 'cancelled',
      result: undefined,
      answer: undefined,
      error: {
        name: 'SystemError',
        code: 'cancelled',
        message: 'Cancelled: interrupted (Ctrl-C)',
        fields: {},
      },
    };
    const out = stripAnsi(
      render('tty', [...events, { type: 'interrupt', count: 1 }, { type: 'ended', line: cancelled }]),
    );
    // Frames before the last one are redrawn over; only the last one stays on screen.
    const lastFrame = out.split('\n').slice(-4).join('\n');
    expect(out).toContain('press Ctrl-C again');
    expect(lastFrame).toContain('2/3  done 1  failed 1  running 0  not run 1');
    expect(lastFrame).not.toContain('ETA');
    expect(lastFrame).not.toContain('press Ctrl-C again');
    expect(lastFrame).toContain('cancelled: 1 of 3 completed; `troupe resume /tmp/runs/r1` runs the 2 left');
  });

  it('the TTY totals mark with ~ only the side of usage troupe estimated', () => {
    const withUsage = (estimatedSide?: 'input' | 'output'): string => {
      const usage = events.find((event) => event.type === 'usage');
      if (usage?.type !== 'usage') throw new Error('no usage event');
      const marked: RunEvent = { ...usage, estimated: true, ...(estimatedSide ? { estimatedSide } : {}) };
      return stripAnsi(
        render(
          'tty',
          events.map((event) => (event === usage ? marked : event)),
        ),
      );
    };
    expect(withUsage('output')).toContain('tokens 1.2k in / ~30 out');
    expect(withUsage('input')).toContain('tokens ~1.2k in / 30 out');
    expect(withUsage()).toContain('tokens ~1.2k in / ~30 out');
  });

  it('quotes a result string that would read as a number, so "112" and 112 look different', () => {
    const endedWith = (result: unknown): string => {
      const out = render('plain', [...events.slice(0, 5), { type: 'ended', line: { ...ended, result } }]);
      return out.split('\n').find((line) => line.includes('completed')) ?? '';
    };
    expect(endedWith({ answer: '112' })).toContain('worker: "112" (');
    expect(endedWith({ answer: 112 })).toContain('worker: {"answer":112} (');
    expect(endedWith('true')).toContain('worker: "true" (');
    expect(endedWith(7)).toContain('worker: 7 (');
    expect(endedWith({ answer: '112 apples' })).toContain('worker: 112 apples (');
  });

  it('shows model text without control characters or credentials, in the TTY and plain displays', () => {
    const hostile = '\u001b[2J\u001b]0;pwned\u0007 key sk-proj-AbCdEf0123456789GhIjKl\u0000 done';
    const hostileEvents: RunEvent[] = [
      ...events.slice(0, 5),
      { type: 'tool', agentId: 'abc-1', index: 1, agent: 'worker', round: 1, tool: `x${hostile}`, ok: true },
      { type: 'text', agentId: 'abc-1', index: 1, agent: 'worker', text: hostile },
      { type: 'ended', line: { ...ended, result: { summary: hostile } } },
    ];
    for (const mode of ['tty', 'plain'] as const) {
      const out = render(mode, hostileEvents);
      expect(out).not.toContain(`${ESC}[2J`);
      for (const control of ['\u0000', '\u0007', ESC]) expect(stripAnsi(out)).not.toContain(control);
      expect(out).not.toContain('sk-proj-');
      expect(stripAnsi(out)).toContain('key [REDACTED] done');
    }
  });

  it('the TTY clock moves every frame while nothing happens, and start-up says what it waits for', () => {
    vi.useFakeTimers();
    try {
      let out = '';
      const renderer = createProgressRenderer('tty', {
        write: (text) => {
          out += text;
        },
        columns: () => 100,
        now: () => Date.now(),
      });
      const frames = (): string[] => stripAnsi(out).split('\r').slice(1);
      const run = events[0];
      if (run?.type !== 'run') throw new Error('the first event is the run');
      renderer.onEvent(run);
      vi.advanceTimersByTime(1000);
      // One frame per PROGRESS_FRAME_MS (100 ms): the elapsed clock differs in every frame.
      const clocks = frames().map((frame) => /elapsed (\S+)/.exec(frame)?.[1]);
      expect(clocks.length).toBeGreaterThanOrEqual(4);
      expect(new Set(clocks).size).toBe(clocks.length);
      expect(frames().at(-1)).toContain('starting 2 worker thread(s): 0 ready ...');

      renderer.onEvent({ type: 'thread', event: 'started', hostId: 0 });
      vi.advanceTimersByTime(100);
      expect(frames().at(-1)).toContain('starting 2 worker thread(s): 1 ready ...');
      renderer.onEvent({ type: 'thread', event: 'started', hostId: 1 });
      vi.advanceTimersByTime(100);
      expect(frames().at(-1)).toContain('starting the first agents ...');
      for (const event of events.slice(1, 4)) renderer.onEvent(event);
      vi.advanceTimersByTime(100);
      expect(frames().at(-1)).not.toContain('starting');
      renderer.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
