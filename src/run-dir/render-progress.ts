/**
 * Progress output of a fan-out session, three ways: a live display redrawn with ANSI escapes on a
 * TTY, one plain line per event otherwise, and JSONL events with `--json`.
 */
import { redactValue } from '../journal/redact.ts';
import { LINE_EXCERPT_CHARS, PROGRESS_BUSIEST_AGENTS, PROGRESS_FRAME_MS } from './constants.ts';
import {
  excerpt,
  formatCost,
  formatDuration,
  formatTokenCount,
  formatTokens,
  printable,
  shortId,
  terminalJson,
} from './format.ts';
import { ProgressState } from './progress-state.ts';
import { ApprovalPanel, approvalLine } from './render-approvals.ts';
import { outcomeText, type ResultLine } from './results.ts';
import type { RunEvent } from './run-events.ts';
import type { RunLimits } from './run-plan.ts';
import { type Palette, palette } from './terminal-style.ts';
import { displayWidth, fitWidth, tableWidth, terminalRows, wrapWidth } from './text-width.ts';

/** Where progress goes. */
export interface ProgressOutput {
  readonly write: (text: string) => void;
  /** Terminal width, for the TTY display. @default 100 */
  readonly columns?: () => number;
  /** @default Date.now */
  readonly now?: () => number;
  /** Where SIGTSTP (Ctrl-Z) and SIGCONT (`fg`) come from, for the TTY display. @default process */
  readonly signals?: Pick<NodeJS.EventEmitter, 'on' | 'off'>;
  /**
   * Stops the process once the TTY display has handled Ctrl-Z (with no SIGTSTP listener left, so
   * it does stop). @default `process.kill(process.pid, 'SIGTSTP')`
   */
  readonly suspend?: () => void;
  /** Colour the TTY display (off under `NO_COLOR` or `FORCE_COLOR=0`, see `terminal-style.ts`). @default true */
  readonly colour?: boolean;
}

/** Shows the progress of a session. */
export interface ProgressRenderer {
  onEvent(event: RunEvent): void;
  /** A line from the command itself (e.g. "cancelling..."), shown in the same stream. */
  note(text: string): void;
  /** Draws the last frame and releases timers. */
  stop(): void;
}

/** Picks the renderer: JSONL events, the live TTY display, or plain lines. */
export function createProgressRenderer(
  mode: 'json' | 'tty' | 'plain',
  output: ProgressOutput,
): ProgressRenderer {
  if (mode === 'json') return new JsonRenderer(output);
  return mode === 'tty' ? new TtyRenderer(output) : new PlainRenderer(output);
}

/** One JSON object per event, with its time. */
class JsonRenderer implements ProgressRenderer {
  readonly #output: ProgressOutput;

  constructor(output: ProgressOutput) {
    this.#output = output;
  }

  onEvent(event: RunEvent): void {
    // Masked as a value first, as results.jsonl is: an `ended` line's answer is JSON text, escaped
    // twice in this line, where masking the printed text misses a PEM key or an `"apiKey": ...`.
    const line = redactValue({ time: new Date(this.#now()).toISOString(), ...event });
    this.#output.write(`${terminalJson(line)}\n`);
  }

  note(text: string): void {
    this.#output.write(
      `${terminalJson({ time: new Date(this.#now()).toISOString(), type: 'note', text })}\n`,
    );
  }

  stop(): void {}

  #now(): number {
    return (this.#output.now ?? Date.now)();
  }
}

/** One line per event that matters to a reader (tool starts, rounds and usage are left to --json). */
class PlainRenderer implements ProgressRenderer {
  readonly #output: ProgressOutput;
  readonly #started: number;
  readonly #neverStarted = new NeverStartedCount();

  constructor(output: ProgressOutput) {
    this.#output = output;
    this.#started = (output.now ?? Date.now)();
  }

  onEvent(event: RunEvent): void {
    if (this.#neverStarted.counts(event)) return;
    const text = plainLine(event);
    if (text === undefined) return;
    const elapsed = `+${formatDuration((this.#output.now ?? Date.now)() - this.#started)}`;
    this.#output.write(event.type === 'run' ? `${text}\n` : `${elapsed.padEnd(8)} ${text}\n`);
  }

  note(text: string): void {
    this.#output.write(`${text}\n`);
  }

  stop(): void {
    const line = this.#neverStarted.take();
    if (line !== undefined) this.#output.write(`${line}\n`);
  }
}

/**
 * Agents spawned but cancelled before they started (a Ctrl-C or a spent budget while they waited
 * for a thread or a worker; with a large `concurrency`, thousands): counted into one line at the
 * end, not printed one by one. Each still has its result line. Plan entries still queued behind
 * `concurrency` are never spawned (see `FanOutOptions.signal`), so they are not among them.
 */
class NeverStartedCount {
  #count = 0;

  /** True when `event` is such an entry's end, which is counted instead of shown. */
  counts(event: RunEvent): boolean {
    if (event.type !== 'ended') return false;
    const { line } = event;
    if (line.status !== 'failed' || line.reason !== 'cancelled' || line.startedAt !== null) return false;
    this.#count += 1;
    return true;
  }

  /** The line counting them (once), or undefined when there were none. */
  take(): string | undefined {
    if (this.#count === 0) return undefined;
    const line = `${'cancelled'.padEnd(10)} ${this.#count} queued agent(s) before they started (each has its line in results.jsonl)`;
    this.#count = 0;
    return line;
  }
}

/** One line for `event`, {@link printable}: tool names and crash messages can come from a model. */
function plainLine(event: RunEvent): string | undefined {
  const line = describeEvent(event);
  return line === undefined ? undefined : printable(line);
}

function describeEvent(event: RunEvent): string | undefined {
  if ('agentId' in event) event = { ...event, agentId: shortId(event.agentId) };
  switch (event.type) {
    case 'run':
      return runHeader(event).join('\n');
    case 'started':
      return `${'started'.padEnd(10)} ${event.agentId} ${event.agent} on thread ${event.hostId}${event.resumed ? ' (resumed from its journal)' : ''}`;
    case 'tool':
      return event.ok === undefined
        ? undefined
        : `${'tool'.padEnd(10)} ${event.agentId} ${event.tool} ${event.ok ? 'ok' : 'failed'}`;
    case 'text':
      return `${'text'.padEnd(10)} ${event.agentId} ${excerpt(event.text, LINE_EXCERPT_CHARS)}`;
    case 'waiting':
      return `${'waiting'.padEnd(10)} ${event.agentId} for an instruction`;
    case 'instructed':
      return `${'instructed'.padEnd(10)} ${event.agentId} ${excerpt(event.text, LINE_EXCERPT_CHARS)}`;
    case 'spawned':
      return event.parentId === null
        ? undefined
        : `${'spawned'.padEnd(10)} ${event.agentId} ${event.agent} by ${event.parentId}`;
    case 'restarted':
      return `${'restarted'.padEnd(10)} ${event.agentId} (restart ${event.restart}): ${event.cause.message}`;
    case 'ended':
      return endedLine(event.line);
    case 'thread':
      return event.event === 'started' ? undefined : `${'thread'.padEnd(10)} ${event.hostId} ${event.event}`;
    case 'backoff':
      return `${'backoff'.padEnd(10)} ${event.provider} rate limited: waiting ${formatDuration(event.retryAfterMs)}`;
    case 'interrupt':
      return undefined;
    case 'budget':
      return `${'budget'.padEnd(10)} spent: ${event.message}; cancelling the running agents`;
    case 'notice':
      return `troupe: ${event.text}`;
    case 'approval':
    case 'decision':
      return approvalLine(event);
    default:
      return undefined;
  }
}

/** The header every output mode starts with (the simulated-model notice included). */
export function runHeader(event: Extract<RunEvent, { type: 'run' }>): string[] {
  const replaying = event.replayOf === undefined ? '' : `replaying ${printable(event.replayOf)}, `;
  const what =
    event.kind === 'resume'
      ? `resuming run ${event.runId}: ${replaying}${event.toRun} of ${event.planned} agent(s) to finish`
      : `run ${event.runId}: ${replaying}${event.toRun} agent(s)`;
  const { engine } = event;
  const where =
    engine.backend === 'threads'
      ? `${engine.threads} thread(s)`
      : `redis (queue ${engine.queue} at ${engine.url}, ${engine.workers} worker(s) connected)`;
  const lines = [
    `troupe ${event.kind}: ${what}, ${event.concurrency} at a time on ${where}, provider ${event.provider}${event.model ? ` (model ${event.model})` : ''}`,
  ];
  if (event.notice) lines.push(`troupe: ${event.notice}`);
  lines.push(`budget: ${runBudgetText(event.runLimits, event.usedTokens)}`);
  for (const notice of event.notices) lines.push(`warning: ${notice}`);
  lines.push(`run dir: ${event.runDir}`);
  return lines;
}

/** `10M tokens (1.2k used) · no cost limit`. */
function runBudgetText(limits: RunLimits, usedTokens: number): string {
  const used = usedTokens > 0 ? ` (${formatTokens(usedTokens)} used)` : '';
  return [
    limits.maxTotalTokens > 0
      ? `${formatTokens(limits.maxTotalTokens)} tokens${used}`
      : `no token limit${used}`,
    limits.maxCostUsd > 0 ? `${formatCost(limits.maxCostUsd)}` : 'no cost limit',
  ].join(' · ');
}

function endedLine(line: ResultLine): string {
  const status = line.status === 'completed' ? 'completed' : 'failed';
  const steps = line.steps === undefined ? '' : `, ${line.steps} step(s)`;
  const cost = `${line.rounds} round(s)${steps}, ${formatTokenCount(line.usage.inputTokens + line.usage.outputTokens, line.usage.estimated)} tokens, ${formatCost(line.costUsd)}`;
  return `${status.padEnd(10)} ${shortId(line.agentId)} ${line.agent}: ${excerpt(outcomeText(line), LINE_EXCERPT_CHARS)} (${cost})`;
}

const BAR_WIDTH = 28;

/**
 * The live display: finished agents scroll above a status block redrawn every frame (10 a second),
 * so its clock moves even while nothing else does.
 */
/** Signals of a platform without job control: none ever come. */
const NO_JOB_CONTROL: Pick<NodeJS.EventEmitter, 'on' | 'off'> = {
  on: () => NO_JOB_CONTROL as NodeJS.EventEmitter,
  off: () => NO_JOB_CONTROL as NodeJS.EventEmitter,
};

class TtyRenderer implements ProgressRenderer {
  readonly #output: ProgressOutput;
  readonly #state: ProgressState;
  readonly #approvals = new ApprovalPanel();
  readonly #neverStarted = new NeverStartedCount();
  readonly #timer: NodeJS.Timeout;
  #log: string[] = [];
  /** Set by {@link stop}: the last frame says how the run ended, with no ETA and no prompt. */
  #final = false;
  /** Agents that ended cancelled, which `troupe resume` runs again. */
  #cancelled = 0;
  /** The block drawn last, which the next frame moves back over. */
  #previous: string[] = [];
  readonly #colours: Palette;
  readonly #signals: Pick<NodeJS.EventEmitter, 'on' | 'off'>;
  /**
   * Ctrl-Z: after `fg` the shell's lines (`[1]+ Stopped`, `fg`) are below the last frame, and
   * moving back over that frame would overwrite them, so the next frame starts where the cursor
   * is. Forgotten here, not on SIGCONT: after a stop the overdue frame runs before the SIGCONT
   * handler does. Then the process stops as it would have without the listener.
   */
  readonly #suspended = (): void => {
    this.#previous = [];
    this.#signals.off('SIGTSTP', this.#suspended);
    (this.#output.suspend ?? (() => process.kill(process.pid, 'SIGTSTP')))();
  };
  readonly #continued = (): void => {
    this.#signals.off('SIGTSTP', this.#suspended);
    this.#signals.on('SIGTSTP', this.#suspended);
  };

  constructor(output: ProgressOutput) {
    this.#output = output;
    this.#colours = palette(output.colour ?? true);
    // Windows has no job control (and no SIGTSTP to listen for).
    this.#signals = output.signals ?? (process.platform === 'win32' ? NO_JOB_CONTROL : process);
    this.#signals.on('SIGTSTP', this.#suspended);
    this.#signals.on('SIGCONT', this.#continued);
    this.#state = new ProgressState(this.#now());
    this.#timer = setInterval(() => this.#draw(), PROGRESS_FRAME_MS);
    this.#timer.unref();
  }

  onEvent(event: RunEvent): void {
    const { green, red, dim, reset } = this.#colours;
    this.#state.apply(event);
    this.#approvalEvent(event);
    if (event.type === 'ended' && event.line.status === 'failed' && event.line.reason === 'cancelled')
      this.#cancelled += 1;
    if (event.type === 'run') {
      // Prose broken at spaces, as the closing summary's notices are (a terminal breaks it
      // mid-word); the run dir is never broken, so it copies whole.
      const width = tableWidth(this.#columns());
      const lines = runHeader(event).flatMap((line) =>
        line.startsWith('run dir: ') ? [line] : wrapWidth(line, width),
      );
      this.#log.push(...lines.map((line) => `${dim}${line}${reset}`));
    }
    if (event.type === 'ended' && !this.#neverStarted.counts(event)) {
      const { line } = event;
      const mark = line.status === 'completed' ? `${green}✔${reset}` : `${red}✘${reset}`;
      this.#log.push(`${mark} ${this.#fit(endedLine(line).replace(/^\S+\s+/, ''), 2)}`);
    }
    if (event.type === 'notice') this.#log.push(`${red}!${reset} ${plainLine(event) ?? ''}`);
    if (event.type === 'restarted' || (event.type === 'thread' && event.event === 'crashed')) {
      const text = plainLine(event);
      if (text) this.#log.push(`${red}!${reset} ${this.#fit(text, 2)}`);
    }
  }

  note(text: string): void {
    this.#log.push(text);
    this.#draw();
  }

  /** Approvals: the waiting ones in the status block, each decision in the log; drawn at once. */
  #approvalEvent(event: RunEvent): void {
    const { green, red, reset } = this.#colours;
    this.#approvals.apply(event);
    if (event.type === 'decision') {
      const mark = event.decision.approved ? `${green}✔${reset}` : `${red}✘${reset}`;
      this.#log.push(`${mark} ${this.#fit(printable(approvalLine(event) ?? ''), 2)}`);
    }
    if (event.type === 'approval' || event.type === 'decision') {
      this.#draw();
    }
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#signals.off('SIGTSTP', this.#suspended);
    this.#signals.off('SIGCONT', this.#continued);
    const { red, reset } = this.#colours;
    const neverStarted = this.#neverStarted.take();
    if (neverStarted !== undefined)
      this.#log.push(`${red}✘${reset} ${this.#fit(neverStarted.replace(/^\S+\s+/, 'cancelled '), 2)}`);
    this.#final = true;
    this.#draw();
  }

  #now(): number {
    return (this.#output.now ?? Date.now)();
  }

  #columns(): number {
    return this.#output.columns?.() ?? 100;
  }

  /** `text` cut to the columns left after `reserved` ones, by display width (CJK and emoji take two). */
  #fit(text: string, reserved = 0): string {
    return fitWidth(text, Math.max(1, this.#columns() - 1 - reserved));
  }

  #draw(): void {
    const block = this.#block();
    // Move to the start of the previous block and clear everything below before redrawing. By
    // rows, not lines, at the width the terminal has now: a line that wraps (a terminal narrower
    // than the bar, or one made narrower since, which re-wraps what it shows) takes more than one,
    // and moving back by fewer would leave a stale copy of the block on every frame.
    const columns = this.#columns();
    const height = this.#previous.reduce((rows, line) => rows + terminalRows(line, columns), 0);
    const up = height > 0 ? `\r\x1b[${height}A\x1b[0J` : '';
    const log = this.#log.map((line) => `${line}\n`).join('');
    this.#log = [];
    this.#output.write(`${up}${log}${block.map((line) => `${line}\n`).join('')}`);
    this.#previous = block;
  }

  #block(): string[] {
    const { green, red, dim, reset } = this.#colours;
    const state = this.#state;
    const now = this.#now();
    const total = Math.max(state.total, 1);
    const done = Math.round((state.completed / total) * BAR_WIDTH);
    const failed = Math.min(BAR_WIDTH - done, Math.round((state.failed / total) * BAR_WIDTH));
    const bar = `${green}${'█'.repeat(done)}${red}${'█'.repeat(failed)}${reset}${dim}${'░'.repeat(BAR_WIDTH - done - failed)}${reset}`;
    const countsText = `${state.finished}/${state.total}  done ${state.completed}  failed ${state.failed}  running ${state.running}  ${state.stopped ? 'not run' : 'queued'} ${state.queued}`;
    // The bar only where it leaves room for the counts: on a narrow terminal the counts matter more.
    const withBar = this.#columns() - 1 - (BAR_WIDTH + 1) >= 20;
    const eta = state.etaMs(now);
    // The last frame stays on screen: an ETA there would read as a frozen clock.
    const etaText = this.#final ? '' : `  ETA ${eta === undefined ? '-' : formatDuration(eta)}`;
    const totals = this.#fit(
      `${state.simulated ? '[simulated model]  ' : ''}tokens ${formatTokenCount(state.inputTokens, state.inputEstimated)} in / ${formatTokenCount(state.outputTokens, state.outputEstimated)} out` +
        `${state.maxRunTokens > 0 ? ` (${formatTokens(state.priorTokens + state.inputTokens + state.outputTokens)} of ${formatTokens(state.maxRunTokens)})` : ''}` +
        `  cost ${state.costUnknown ? `${formatCost(state.costUsd)}+unknown` : formatCost(state.costUsd)}  ${state.rate(now).toFixed(1)} agents/s` +
        `${etaText}  elapsed ${formatDuration(now - state.startedAt)}`,
    );
    const lines = [
      withBar ? `${bar} ${this.#fit(countsText, BAR_WIDTH + 1)}` : this.#fit(countsText),
      totals,
    ];
    if (this.#final) return [...lines, ...this.#endLines()];
    const startup = state.startup;
    if (startup !== undefined && !state.interrupted)
      lines.push(`${dim}${this.#fit(`${startup} ...`)}${reset}`);
    if (state.interrupted)
      lines.push(`${red}${this.#fit('cancelling: press Ctrl-C again to exit at once')}${reset}`);
    for (const agent of state.busiest(PROGRESS_BUSIEST_AGENTS)) {
      lines.push(`${dim}${this.#fit(`  ${shortId(agent.agentId)} ${agent.agent}: ${agent.latest}`)}${reset}`);
    }
    lines.push(...this.#approvals.lines((text) => this.#fit(printable(text)), this.#colours));
    return lines;
  }

  /**
   * The last frame's closing line after a Ctrl-C or a spent budget, in place of the "press Ctrl-C
   * again" prompt (nothing is waiting for it any more) and of the agents' stale activity.
   */
  #endLines(): string[] {
    const { red, reset } = this.#colours;
    const state = this.#state;
    if (!state.stopped) return [];
    const why = state.interrupted ? 'cancelled' : "stopped: the run's budget is spent";
    // A cancelled agent is run again by `troupe resume`, like one never started.
    const left = state.total - state.finished + this.#cancelled;
    const ended = `${why}: ${state.completed} of ${state.total} completed`;
    // The budget's resume needs a larger --max-run-tokens: the closing summary below says which.
    let text = ended;
    if (left > 0 && state.interrupted) {
      // A run dir cut to the width could not be copied: then the summary below has it whole.
      const withDir = `${ended}; \`troupe resume ${state.runDir}\` runs the ${left} left`;
      text =
        state.runDir !== '' && displayWidth(withDir) <= this.#columns() - 1
          ? withDir
          : `${ended}; \`troupe resume\` (below) runs the ${left} left`;
    }
    return [`${red}${this.#fit(text)}${reset}`];
  }
}
