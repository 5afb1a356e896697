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
    concurrency: 2,
    backend: 'threads',
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
    costUsd: 0.0123,
  },
  { type: 'ended', line: ended },
];

const ESC = '\u001b';

function stripAnsi(text: string): string {
  return text.replace(new RegExp(`${ESC}\\[[0-9;]*[A-Za-z]`, 'g'), '');
}

function render(mode: 'json' | 'tty' | 'plain'): string {
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
  for (const event of events) renderer.onEvent(event);
  renderer.note('a note');
  renderer.stop();
  return out;
}

describe('progress renderers', () => {
  it('plain output is one line per event that matters, headed by the simulated-model notice', () => {
    const lines = render('plain').trimEnd().split('\n');
    expect(lines.slice(0, 3)).toEqual([
      'troupe fanout: run r1: 3 agent(s), 2 at a time on 2 thread(s), provider simulated (model simulated)',
      'troupe: using the simulated model: canned answers',
      'run dir: /tmp/runs/r1',
    ]);
    expect(lines.slice(3).map((line) => line.replace(/^\+\S+\s+/, ''))).toEqual([
      'started    abc-0 worker on thread 0',
      'started    abc-1 worker on thread 1',
      'tool       abc-1 read_file ok',
      'completed  abc-0 worker: all good (2 round(s), 1.2k tokens, $0.0123)',
      'a note',
    ]);
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
    expect(plain).toContain('[simulated model]  tokens 1.2k in / 30 out  cost $0.0123');
    expect(plain).toContain('abc-1 worker: read_file ok');
    expect(plain).toContain('✔ abc-0 worker: all good');
    expect(plain).toContain('troupe: using the simulated model: canned answers');
    // The second frame moves back over the first one and clears it before drawing.
    expect(out).toMatch(new RegExp(`\r${ESC}\\[\\d+A${ESC}\\[0J`));
    // Lines of the redrawn block must not wrap, or moving back over them would miss some.
    const lastFrame = stripAnsi(out.split(`${ESC}[0J`).at(-1) ?? '');
    for (const line of lastFrame.split('\n').slice(-4)) expect(line.length).toBeLessThanOrEqual(80);
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
