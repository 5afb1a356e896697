/**
 * Runs a fan-out session from the command line: progress output (TTY display, plain lines or
 * JSONL), Ctrl-C handling and the closing summary. The first SIGINT cancels the running agents
 * (they end Failed(cancelled), finished results stay on disk, the summary is written); a second
 * one writes the summary and exits at once with code 130. SIGTERM and SIGHUP (`kill`, `timeout`,
 * `docker stop`, a closed terminal, a cancelled CI job) do the same, exiting 143 and 129: on the
 * redis engine agents run in other processes, and nothing else would stop them.
 */
import type { FailureReason } from '../loop/types.ts';
import { type ApprovalRecord, approvalCounts, deniedLines, readApprovals } from './approvals.ts';
import { EXIT_INTERRUPTED } from './constants.ts';
import {
  type EstimatedUsage,
  formatCost,
  formatDuration,
  formatTokenCount,
  printable,
  sideEstimated,
} from './format.ts';
import { INTERRUPT_EXIT_CODES, type SignalSource, watchInterrupts } from './interrupt.ts';
import { type ProviderChoice, simulatedNotice, simulatedRunNotice } from './provider-choice.ts';
import { createProgressRenderer } from './render-progress.ts';
import { NOT_RETRIED_BY_DEFAULT } from './results.ts';
import { scorerLines } from './scoring-text.ts';
import { FanoutSession, type SessionOptions, type SessionResult } from './session.ts';
import type { RunSummary } from './summary.ts';
import { terminalAbilities } from './terminal-style.ts';
import { tableWidth, wrapWidth } from './text-width.ts';

/** Output streams of a command. */
export interface CommandOutput {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Aborted when stdout's reader has gone: the run is cancelled as by a first Ctrl-C, quietly. */
  readonly stdoutClosed?: AbortSignal;
}

/** Options of {@link executeSession}. */
export interface ExecuteOptions extends Omit<SessionOptions, 'signal' | 'onEvent'> {
  readonly json: boolean;
  readonly io: CommandOutput;
  /**
   * Draw the live display (never with `json`, nor under `TERM=dumb`, which gets plain lines).
   * @default process.stdout.isTTY
   */
  readonly tty?: boolean;
  /** Terminal width for the live display. @default process.stdout.columns */
  readonly columns?: () => number;
  /** Called by the second Ctrl-C. @default process.exit */
  readonly exit?: (code: number) => void;
  /** Where SIGINT, SIGTERM and SIGHUP come from. @default process */
  readonly signals?: SignalSource;
  /** Print the closing summary (not with `json`). @default true */
  readonly closing?: boolean;
}

/** What {@link executeSession} ended with. */
export interface ExecuteResult extends SessionResult {
  /** 0 every plan entry completed; 1 some failed; 130 interrupted. */
  readonly exitCode: number;
}

/** Runs the session with progress output and Ctrl-C handling; prints the closing summary. */
export async function executeSession(options: ExecuteOptions): Promise<ExecuteResult> {
  const { io, json } = options;
  const terminal = terminalAbilities();
  const tty = !json && terminal.cursor && (options.tty ?? process.stdout.isTTY === true);
  const columns = options.columns ?? (() => process.stdout.columns || 100);
  const renderer = createProgressRenderer(json ? 'json' : tty ? 'tty' : 'plain', {
    write: io.stdout,
    colour: terminal.colour,
    columns,
  });
  const controller = new AbortController();
  const session = new FanoutSession({
    ...options,
    signal: controller.signal,
    onEvent: (e) => renderer.onEvent(e),
  });
  let exitCode: number = EXIT_INTERRUPTED;
  const stopWatching = watchInterrupts(
    (signal) => {
      exitCode = INTERRUPT_EXIT_CODES[signal];
      renderer.onEvent({ type: 'interrupt', count: 1 });
      renderer.note(
        `troupe: ${signal === 'SIGINT' ? '' : `${signal}: `}cancelling the running agents; finished results stay in the run directory (Ctrl-C again exits at once)`,
      );
      controller.abort(new Error(signal === 'SIGINT' ? 'interrupted (Ctrl-C)' : `interrupted (${signal})`));
    },
    (signal) => {
      renderer.stop();
      session.writeSummary(true);
      io.stderr(`troupe: exiting at once; results so far are in ${options.writer.paths.root}\n`);
      (options.exit ?? process.exit)(INTERRUPT_EXIT_CODES[signal]);
    },
    options.signals ?? process,
  );
  // Nobody reads the output any more (`troupe fanout --json | head`): stop the agents, keep what
  // finished, write the summary. Nothing is printed: there is nowhere to print it.
  const closed = io.stdoutClosed;
  const onClosed = (): void => controller.abort(new Error('stdout was closed'));
  if (closed?.aborted) onClosed();
  else closed?.addEventListener('abort', onClosed, { once: true });
  let result: SessionResult;
  try {
    result = await session.run();
  } finally {
    stopWatching();
    closed?.removeEventListener('abort', onClosed);
    renderer.stop();
  }
  if (!json && options.closing !== false) {
    const root = options.writer.paths.root;
    const width = tty ? tableWidth(columns()) : Number.POSITIVE_INFINITY;
    io.stdout(closingText(result.summary, root, readApprovals(root), options.plan.provider.source, width));
  }
  const { counts } = result.summary;
  return {
    ...result,
    exitCode: result.interrupted
      ? exitCode
      : counts.failed > 0 || counts.notRun > 0 || counts.interrupted > 0
        ? 1
        : 0,
  };
}

/**
 * The lines printed after a session: outcome counts, usage, cost, approvals (every denied call
 * listed), where the results are, what next. Prose lines are broken at spaces to `width` columns;
 * the run dir and the commands are not, so they can be copied whole. `report`: for `troupe report`
 * of a past run, whose simulated model is told in the past tense.
 */
export function closingText(
  summary: RunSummary,
  runDir: string,
  approvals: readonly ApprovalRecord[] = [],
  providerSource?: ProviderChoice['source'],
  width = Number.POSITIVE_INFINITY,
  report = false,
): string {
  const { counts } = summary;
  const failures = Object.entries(summary.failures)
    .map(([reason, count]) => `${reason} ${count}`)
    .join(', ');
  const spawned = counts.nested.completed + counts.nested.failed;
  // `failures` counts spawned agents too: next to the plan entries' count it read as their breakdown
  // ("0 failed (cancelled 6)"), so with spawned agents it comes last, under its own name.
  const nested =
    spawned > 0
      ? `; ${spawned} spawned by agents (${counts.nested.failed} failed)${failures ? `; failures: ${failures}` : ''}`
      : '';
  const lines = [
    `${summary.interrupted ? 'interrupted' : 'finished'}: ${counts.completed} of ${counts.planned} completed, ` +
      `${counts.failed} failed${failures && spawned === 0 ? ` (${failures})` : ''}${counts.interrupted > 0 ? `, ${counts.interrupted} interrupted` : ''}${counts.notRun > 0 ? `, ${counts.notRun} not run` : ''}${nested}`,
    `tokens ${formatTokenCount(summary.usage.inputTokens, sideEstimated(summary.usage, 'input'))} in / ${formatTokenCount(summary.usage.outputTokens, sideEstimated(summary.usage, 'output'))} out` +
      `${estimateSuffix(summary.usage)}, ` +
      `cost ${formatCost(summary.costUsd)}${summary.unpricedAgents > 0 ? ` (no price for the model of ${summary.unpricedAgents} agent(s))` : ''}, wall time ${formatDuration(summary.wallTimeMs)}`,
  ];
  if (summary.scoring !== undefined)
    lines.push(...scorerLines(summary.scoring).map((line) => `score ${line}`));
  if (summary.replay !== undefined) {
    const { recorded, live, refused } = summary.replay.calls;
    const unrecorded = summary.replay.unrecorded ?? 0;
    lines.push(
      `replay of ${printable(summary.replay.of)}: ${recorded} tool call(s) answered from the recording, ` +
        `${live} run live (read-only), ${refused} refused` +
        `${unrecorded > 0 ? `; ${unrecorded} entr${unrecorded === 1 ? 'y' : 'ies'} had no recorded journal (replayed with nothing recorded)` : ''}`,
    );
  }
  if (approvals.length > 0) {
    const { approved, denied } = approvalCounts(approvals);
    lines.push(
      `approvals: ${approved} approved, ${denied} denied${denied > 0 ? ':' : ''}`,
      ...deniedLines(approvals),
    );
  }
  if (summary.budgetSpent) lines.push(`stopped: the run's budget is spent (${summary.budgetSpent})`);
  // A report of a past run calls no model: it says what the run used, not what troupe is using.
  if (summary.simulated)
    lines.push(report ? simulatedRunNotice(providerSource) : `troupe: ${simulatedNotice(providerSource)}`);
  const shown = lines.flatMap((line) => wrapWidth(line, width));
  shown.push(`run dir: ${runDir}`, `  report: troupe report ${runDir} [--html report.html]`);
  if (!summary.complete && summary.budgetSpent !== undefined && summary.runLimits.maxTotalTokens > 0) {
    // A plain resume would run nothing: the budget counts every earlier session.
    shown.push(
      `  finish: troupe resume ${runDir} --max-run-tokens N (more than ${summary.runLimits.maxTotalTokens}; 0 = unlimited)`,
    );
  } else if (!summary.complete) {
    // Also after a killed `--retry-failed`: a plain resume finishes the retry it left (interrupted).
    shown.push(`  finish: troupe resume ${runDir}`);
  }
  // Only when --retry-failed would run one of them: a tool module that does not load, say, fails
  // its entries with invalid_request, which it leaves alone.
  else if (counts.failed > 0 && Object.keys(summary.failures).some((reason) => !isNotRetried(reason)))
    shown.push(`  retry the failed: troupe resume ${runDir} --retry-failed`);
  // A score cut off by the interruption (a judge cancelled, a scorer function not waited for) is an
  // error that `troupe resume` leaves as it is: the entry completed.
  const scoringCut =
    summary.interrupted && Object.values(summary.scoring?.scorers ?? {}).some((totals) => totals.errors > 0);
  if (scoringCut) shown.push(`  score again: troupe score ${runDir}`);
  return `${shown.join('\n')}\n`;
}

/** ` (~ estimated ...)` after a run's token counts, naming the side when every estimate was of one. */
function estimateSuffix(usage: EstimatedUsage): string {
  if (usage.estimated !== true) return '';
  return usage.estimatedSide === undefined
    ? ' (~ estimated where the server reported no usage)'
    : ` (~ ${usage.estimatedSide} estimated where the server reported no readable ${usage.estimatedSide} count)`;
}

function isNotRetried(reason: string): boolean {
  return NOT_RETRIED_BY_DEFAULT.has(reason as FailureReason);
}
