/** `troupe compare` in the terminal: both runs, scorers, totals, every changed item, the gates. */
import { COMPARE_JSON_PIECE_CHARS, COMPARE_TOOL_CALL_ITEMS } from '../constants.ts';
import { excerpt, formatCost, formatDuration, formatTokens, table, tableLines } from '../run-dir/format.ts';
import { percent } from '../run-dir/scoring-text.ts';
import { fitWidth, tableWidth } from '../run-dir/text-width.ts';
import type { ItemComparison, ItemSide, RunComparison, RunTotals } from './compare.ts';
import type { GateResult } from './gate.ts';
import { formatToolCall } from './tool-calls.ts';

/** Options of {@link compareText}. */
export interface CompareTextOptions {
  /** Terminal width; longer table lines are cut. @default 120 */
  readonly columns?: number;
  /** List every item, not only the changed ones. @default false */
  readonly all?: boolean;
  /** Tool-call differences listed per item. @default 6 */
  readonly maxToolCalls?: number;
}

/** The comparison as text (not yet sanitized: the caller prints it through its terminal filter). */
export function compareText(
  comparison: RunComparison,
  gates: readonly GateResult[],
  options: CompareTextOptions = {},
): string {
  return [...compareTextPieces(comparison, gates, options)].join('');
}

/**
 * {@link compareText} in pieces that each end a line, gathered up to COMPARE_JSON_PIECE_CHARS
 * (64 KiB) of text (one longer line is a piece of its own): made a line at a time, so the text of
 * every item (`--all`) is never one string. Joined, they are `compareText`'s text.
 */
export function* compareTextPieces(
  comparison: RunComparison,
  gates: readonly GateResult[],
  options: CompareTextOptions = {},
): Generator<string> {
  let pending: string[] = [];
  let pendingChars = 0;
  for (const line of compareTextLines(comparison, gates, options)) {
    pending.push(line, '\n');
    pendingChars += line.length + 1;
    if (pendingChars >= COMPARE_JSON_PIECE_CHARS) {
      yield pending.join('');
      pending = [];
      pendingChars = 0;
    }
  }
  if (pending.length > 0) yield pending.join('');
}

/** The lines of {@link compareText}, each without its line end. */
function* compareTextLines(
  comparison: RunComparison,
  gates: readonly GateResult[],
  options: CompareTextOptions,
): Generator<string> {
  const width = tableWidth(options.columns ?? 120);
  const clipLine = (line: string): string => fitWidth(line, width);
  const { a, b } = comparison;
  const lines = [
    `A: ${runLine(a)}`,
    `B: ${runLine(b)}`,
    `items: ${comparison.matched} matched (by id, else by position), ${comparison.onlyA} only in A, ${comparison.onlyB} only in B`,
  ];
  if (!comparison.toolCallsCompared) lines.push(toolCallsSkipped(comparison));
  const unreadable = comparison.items.filter((item) => item.taskProblem !== undefined);
  if (unreadable.length > 0)
    lines.push(
      clipLine(
        `tasks unreadable (compared without them): ${unreadable
          .slice(0, 5)
          .map((item) => `${item.id ?? item.key} (${item.taskProblem?.code})`)
          .join(', ')}${unreadable.length > 5 ? `, and ${unreadable.length - 5} more` : ''}`,
      ),
    );
  lines.push('');
  const scorers = Object.values(comparison.scorers);
  if (scorers.length > 0) {
    lines.push(
      ...table([
        ['SCORER', 'PASS A', 'PASS B', 'DELTA', 'MEAN A', 'MEAN B', 'BETTER', 'WORSE'],
        ...scorers.map((s) => [
          s.declaredIn === 'both' ? s.name : `${s.name} (only in ${s.declaredIn.toUpperCase()})`,
          `${s.passedA}/${s.items} ${percent(s.passRateA)}`,
          `${s.passedB}/${s.items} ${percent(s.passRateB)}`,
          points(s.delta),
          s.meanA.toFixed(2),
          s.meanB.toFixed(2),
          String(s.improved),
          String(s.regressed),
        ]),
      ]).map(clipLine),
      '',
    );
  } else {
    lines.push('no scorers: neither run declares `scorers` (see `troupe score`)', '');
  }
  lines.push(
    `outcomes: A ${a.completed} completed, ${a.failed} failed${a.notRun ? `, ${a.notRun} not run` : ''}; ` +
      `B ${b.completed} completed, ${b.failed} failed${b.notRun ? `, ${b.notRun} not run` : ''}; ` +
      `${comparison.regressed} regressed, ${comparison.fixed} fixed`,
    `tokens: ${formatTokens(total(a))} -> ${formatTokens(total(b))} (${signedTokens(total(b) - total(a))}); ` +
      `cost: ${formatCost(a.costUsd)} -> ${formatCost(b.costUsd)} (${a.costUsd === null || b.costUsd === null ? 'unknown' : signedCost(b.costUsd - a.costUsd)}); ` +
      `mean latency: ${latency(a.meanLatencyMs)} -> ${latency(b.meanLatencyMs)}${
        a.meanLatencyMs !== null && b.meanLatencyMs !== null
          ? ` (${signedDuration(b.meanLatencyMs - a.meanLatencyMs)})`
          : ''
      }`,
    '',
  );
  const shown = options.all ? comparison.items : comparison.items.filter((item) => item.changed);
  const names = Object.keys(comparison.scorers);
  if (shown.length === 0) {
    lines.push(
      `no item changed: same outcomes, scores${comparison.toolCallsCompared ? ', outputs and tool calls' : ' and outputs'}`,
    );
  } else {
    lines.push(`${options.all ? 'items' : 'changed items'} (${shown.length} of ${comparison.items.length}):`);
    const calls = comparison.toolCallsCompared;
    yield* lines;
    lines.length = 0;
    const header = [
      'ITEM',
      'OUTCOME',
      ...names.map((n) => n.toUpperCase()),
      'TOKENS',
      'COST',
      'LATENCY',
      ...(calls ? ['TOOL CALLS'] : []),
    ];
    const row = (item: ItemComparison): string[] => [
      item.id ?? item.key,
      outcomeCell(item),
      ...names.map((name) => scoreCell(item, name)),
      item.tokensDelta === undefined ? '-' : signedTokens(item.tokensDelta),
      item.costDeltaUsd === undefined ? '-' : signedCost(item.costDeltaUsd),
      item.latencyDeltaMs === undefined ? '-' : signedDuration(item.latencyDeltaMs),
      ...(calls
        ? [
            item.toolCalls === undefined
              ? item.a && item.b
                ? '?'
                : '-'
              : `-${count(item.toolCalls.onlyA)} +${count(item.toolCalls.onlyB)}`,
          ]
        : []),
    ];
    // A row at a time (`--all` of 100,000 items was one array of rows, one of lines, one string).
    for (const line of tableLines(function* () {
      yield header;
      for (const item of shown) yield row(item);
    }))
      yield clipLine(line);
    const max = options.maxToolCalls ?? 6;
    const withCalls = shown.filter(
      (item) =>
        item.toolCalls !== undefined && (item.toolCalls.onlyA.length > 0 || item.toolCalls.onlyB.length > 0),
    );
    if (withCalls.length > 0) {
      lines.push('', 'tool calls that differ (- only in A, + only in B):');
      for (const item of withCalls) {
        lines.push(`  ${item.id ?? item.key}:`);
        const calls = [
          ...(item.toolCalls?.onlyA ?? []).map((call) => `    - ${formatToolCall(call)}`),
          ...(item.toolCalls?.onlyB ?? []).map((call) => `    + ${formatToolCall(call)}`),
        ];
        lines.push(...calls.slice(0, max).map(clipLine));
        if (calls.length > max) lines.push(`    … ${calls.length - max} more (--json lists them all)`);
        yield* lines;
        lines.length = 0;
      }
    }
    const texts = shown
      .filter((item) => item.a && item.b && item.a.outputDigest !== item.b.outputDigest)
      .slice(0, 10);
    if (texts.length > 0) {
      lines.push('', 'outputs that differ:');
      for (const item of texts) {
        lines.push(clipLine(`  ${item.id ?? item.key}: A ${excerpt(item.a?.output ?? '', 60)}`));
        lines.push(
          clipLine(`  ${' '.repeat((item.id ?? item.key).length)}  B ${excerpt(item.b?.output ?? '', 60)}`),
        );
      }
    }
  }
  for (const gate of gates) {
    lines.push(
      '',
      `gate ${gate.scorer}:${gate.minDelta}: ${gate.ok ? 'ok' : 'FAILED'} (pass rate ${percent(gate.passRateA)} -> ${percent(gate.passRateB)}, ${points(gate.delta)}${gate.ok ? '' : `, below ${points(gate.minDelta)}`})`,
    );
  }
  yield* lines;
}

function runLine(run: RunTotals): string {
  return `${run.runId}${run.name ? ` (${run.name})` : ''}, provider ${run.provider}${run.model ? `, model ${run.model}` : ''}${run.simulated ? ' [simulated model]' : ''}, ${run.dir}`;
}

function outcomeCell(item: ItemComparison): string {
  const status = (side: ItemSide | undefined): string =>
    side === undefined
      ? 'absent'
      : side.status === 'failed'
        ? `failed (${side.reason ?? '?'})`
        : side.status.replace('_', ' ');
  if (item.outcome === 'same') return status(item.a);
  return `${status(item.a)} -> ${status(item.b)}`;
}

function scoreCell(item: ItemComparison, name: string): string {
  const delta = item.scores[name];
  if (delta === undefined) return '-';
  const cell = (score: { pass: boolean; score: number } | undefined): string =>
    score === undefined ? '-' : `${score.pass ? 'pass' : 'FAIL'} ${score.score.toFixed(2)}`;
  return delta.change === 'same' ? cell(delta.a) : `${cell(delta.a)} -> ${cell(delta.b)}`;
}

function count(calls: readonly { count: number }[]): number {
  return calls.reduce((sum, call) => sum + call.count, 0);
}

function total(run: RunTotals): number {
  return run.usage.inputTokens + run.usage.outputTokens;
}

/** A pass-rate difference in percentage points: "+12.5 pp". */
export function points(delta: number): string {
  const value = delta * 100;
  return `${value >= 0 ? '+' : ''}${value.toFixed(1)} pp`;
}

function signedTokens(delta: number): string {
  return `${delta >= 0 ? '+' : '-'}${formatTokens(Math.abs(delta))}`;
}

function signedCost(delta: number): string {
  return `${delta >= 0 ? '+' : '-'}${formatCost(Math.abs(delta))}`;
}

function signedDuration(delta: number): string {
  return `${delta >= 0 ? '+' : '-'}${formatDuration(Math.abs(delta))}`;
}

function latency(ms: number | null): string {
  return ms === null ? '-' : formatDuration(ms);
}

/** Why the tool calls are not in the comparison, and how to get them. */
function toolCallsSkipped(comparison: RunComparison): string {
  const ran = comparison.items.filter((item) => item.a?.agentId && item.b?.agentId).length;
  if (ran <= COMPARE_TOOL_CALL_ITEMS) return 'tool calls: not compared (--no-tool-calls)';
  return (
    `tool calls: not compared (${ran} items ran in both runs, more than ${COMPARE_TOOL_CALL_ITEMS}: ` +
    `their ${2 * ran} journals were not read; --tool-calls compares them)`
  );
}
