import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { createProgressRenderer } from '../../src/run-dir/render-progress.ts';
import type { RunEvent } from '../../src/run-dir/run-events.ts';

/**
 * A terminal `columns` wide, enough of one to watch the live display: printable characters
 * (CJK and emoji two columns), automatic wrap at the right edge, `\r`, `\n` (as a tty's onlcr
 * sends it: to the start of the next row), cursor up (`ESC[nA`) and erase below (`ESC[0J`);
 * colours are ignored.
 */
class Terminal {
  #rows: string[][] = [[]];
  #row = 0;
  #col = 0;

  constructor(public columns: number) {}

  write(text: string): void {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a terminal reads escape sequences
    for (const token of text.match(/\u001b\[[0-9;]*[A-Za-z]|[\s\S]/gu) ?? []) {
      if (token.startsWith('\u001b[')) {
        const n = Number.parseInt(token.slice(2), 10) || 1;
        if (token.endsWith('A')) this.#row = Math.max(0, this.#row - n);
        else if (token.endsWith('J')) {
          this.#rows.length = this.#row + 1;
          this.#rows[this.#row] = (this.#rows[this.#row] ?? []).slice(0, this.#col);
        }
      } else if (token === '\r') this.#col = 0;
      else if (token === '\n') this.#moveDown();
      else {
        const width =
          /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60]|\p{Extended_Pictographic}/u.test(
            token,
          )
            ? 2
            : 1;
        if (this.#col + width > this.columns) this.#moveDown();
        const row = this.#rows[this.#row] ?? [];
        row[this.#col] = token;
        if (width === 2) row[this.#col + 1] = '';
        this.#rows[this.#row] = row;
        this.#col += width;
      }
    }
  }

  /** The rows shown, scrollback included. */
  screen(): string[] {
    return this.#rows.map((row) => row.join(''));
  }

  #moveDown(): void {
    this.#row += 1;
    this.#col = 0;
    this.#rows[this.#row] ??= [];
  }
}

const run: RunEvent = {
  type: 'run',
  runId: 'r1',
  runDir: '/tmp/runs/r1',
  kind: 'fanout',
  provider: 'simulated',
  model: 'simulated',
  simulated: true,
  notice: 'using the simulated model: canned answers',
  planned: 2,
  toRun: 2,
  threads: 2,
  engine: { backend: 'threads', threads: 2 },
  concurrency: 2,
  runLimits: { maxTotalTokens: 10_000_000, maxCostUsd: 0 },
  usedTokens: 0,
  notices: [],
};

const agent = { agentId: 'abc-0', index: 0, agent: 'worker' } as const;

/** Draws `events` then `frames` frames (10 a second) on `terminal`; returns how many status bars it shows. */
function draw(terminal: Terminal, events: readonly RunEvent[], frames: number): number {
  vi.useFakeTimers();
  try {
    const renderer = createProgressRenderer('tty', {
      write: (text) => terminal.write(text),
      columns: () => terminal.columns,
      now: () => Date.now(),
    });
    for (const event of events) renderer.onEvent(event);
    vi.advanceTimersByTime(frames * 100);
    renderer.stop();
  } finally {
    vi.useRealTimers();
  }
  return terminal.screen().filter((row) => row.includes('░')).length;
}

const started: RunEvent[] = [
  run,
  { type: 'spawned', ...agent, parentId: null, task: 'a' },
  { type: 'started', ...agent, hostId: 0, resumed: false },
];

describe('the live display on a real terminal', () => {
  it('breaks the header at spaces, never mid-word, and keeps the run dir whole', () => {
    const terminal = new Terminal(40);
    const runDir = '/var/tmp/a-rather-long-project-directory/.troupe/runs/20261207-165857-53511e';
    const notice =
      "using the simulated model: no API key is set, so answers are canned, not a real model's (set OPENAI_API_KEY, OPENAI_BASE_URL or ANTHROPIC_API_KEY)";
    draw(terminal, [{ ...run, runDir, notice }], 1);
    const header = terminal.screen().join('\n');
    for (const word of ['OPENAI_API_KEY,', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY)', 'simulated']) {
      expect(header).toContain(word);
    }
    expect(header).toContain(`run dir: ${runDir}`.slice(0, 40));
    // The run dir line is written whole (the terminal wraps it), not cut with `…`.
    expect(header.replaceAll('\n', '')).toContain(`run dir: ${runDir}`);
  });

  it.each([20, 40])('redraws one status block in place on a terminal %i columns wide', (columns) => {
    const terminal = new Terminal(columns);
    expect(draw(terminal, started, 20)).toBeLessThanOrEqual(1);
    // Nothing of the status block is left above the last one: its counts line shows once.
    expect(terminal.screen().filter((row) => /\d+\/2 /.test(row)).length).toBe(1);
  });

  it('redraws in place while wide characters (CJK, emoji) are in the block', () => {
    const terminal = new Terminal(80);
    const wide = '漢字'.repeat(40);
    const events: RunEvent[] = [
      ...started,
      {
        type: 'text',
        ...agent,
        text: `${wide} 🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀🎉🚀`,
      },
      {
        type: 'approval',
        ...agent,
        request: {
          requestId: 'req-1',
          agentId: 'abc-0',
          tool: 'run_terminal_cmd',
          args: { command: `echo ${wide}` },
          rule: 'run_terminal_cmd',
          reason: 'an ask rule',
        },
      } as unknown as RunEvent,
    ];
    expect(draw(terminal, events, 20)).toBe(1);
  });

  it('a cut never splits an emoji into a lone surrogate', () => {
    const terminal = new Terminal(60);
    // The cut falls after an odd number of UTF-16 units: in the middle of an emoji's surrogate pair.
    const text = `a${'🎉'.repeat(100)}`;
    draw(terminal, [...started, { type: 'text', ...agent, text }], 2);
    for (const row of terminal.screen()) expect(row).not.toMatch(/\p{Cs}/u);
  });

  it("after Ctrl-Z and fg, redraws below the shell's lines instead of over them", () => {
    const terminal = new Terminal(80);
    const signals = new EventEmitter();
    let stops = 0;
    let screen: string[] = [];
    vi.useFakeTimers();
    try {
      const renderer = createProgressRenderer('tty', {
        write: (text) => terminal.write(text),
        columns: () => terminal.columns,
        now: () => Date.now(),
        signals,
        suspend: () => {
          stops += 1;
        },
      });
      for (const event of started) renderer.onEvent(event);
      vi.advanceTimersByTime(500);
      signals.emit('SIGTSTP');
      expect(stops).toBe(1);
      // Stopped: the shell writes below the last frame; `fg` continues the process, and the
      // overdue frame runs before the SIGCONT handler.
      terminal.write(
        '[1]+  Stopped                 troupe fanout plan.yaml\n$ fg\ntroupe fanout plan.yaml\n',
      );
      vi.advanceTimersByTime(100);
      signals.emit('SIGCONT');
      vi.advanceTimersByTime(500);
      screen = terminal.screen();
      // A second Ctrl-Z stops again.
      signals.emit('SIGTSTP');
      expect(stops).toBe(2);
      signals.emit('SIGCONT');
      renderer.stop();
      expect(signals.listenerCount('SIGTSTP') + signals.listenerCount('SIGCONT')).toBe(0);
    } finally {
      vi.useRealTimers();
    }
    const fg = screen.indexOf('$ fg');
    expect(fg).toBeGreaterThan(0);
    expect(screen.some((row) => row.startsWith('[1]+  Stopped'))).toBe(true);
    // One block below the shell's lines, redrawn in place there.
    expect(screen.slice(fg).filter((row) => row.includes('░')).length).toBe(1);
  });
});
