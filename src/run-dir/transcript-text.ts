/**
 * An agent's transcript for the terminal (`troupe show`): a header, then round by round every
 * model request, the model's text, every tool call with its arguments and result, state changes,
 * waits, restarts, and the outcome. Long texts are cut to a few lines unless `full`; `inputs` adds
 * each round's input as the model got it. Everything passes through `printable`.
 */
import { redactValue } from '../journal/redact.ts';
import { SHOW_TEXT_LINES } from './constants.ts';
import { formatCost, formatDuration, formatTokenCount, printable, sideEstimated } from './format.ts';
import type { ReportAgent } from './timeline.ts';
import type { ApprovalInfo, RequestEntry, ToolEntry, TranscriptEntry } from './transcript.ts';

/** Options of {@link transcriptText}. */
export interface TranscriptTextOptions {
  /** Print every text whole. @default false: cut to SHOW_TEXT_LINES lines */
  readonly full?: boolean;
  /** Print each round's input (context, task, history, states). @default false */
  readonly inputs?: boolean;
}

/** The terminal transcript of `agent`. */
export function transcriptText(agent: ReportAgent, options: TranscriptTextOptions = {}): string {
  const transcript = agent.transcript;
  const out: string[] = [];
  const head = `agent ${agent.agentId} (${agent.agent})${agent.label ? ` [${agent.label}]` : ''}`;
  out.push(`${head}: ${agent.status}${agent.reason ? ` (${agent.reason})` : ''}`);
  const facts = [
    agent.parentId ? `spawned by ${agent.parentId}` : undefined,
    agent.index !== null ? `plan entry #${agent.index}` : undefined,
    transcript ? `${transcript.provider} / ${transcript.model}` : undefined,
    agent.hostId !== null
      ? `thread ${agent.hostId}${agent.restarts > 0 ? `, restarted ${agent.restarts}x` : ''}`
      : undefined,
    `${agent.steps} request(s), ${agent.toolCalls} tool call(s)${agent.retries > 0 ? `, ${agent.retries} retries` : ''}`,
    `${formatTokenCount(agent.usage.inputTokens, sideEstimated(agent.usage, 'input'))} in / ${formatTokenCount(agent.usage.outputTokens, sideEstimated(agent.usage, 'output'))} out, ${formatCost(agent.costUsd)}`,
    agent.start !== undefined && agent.end !== undefined
      ? formatDuration(agent.end - agent.start)
      : undefined,
  ].filter((fact): fact is string => fact !== undefined);
  out.push(facts.join(' · '));
  if (transcript === undefined) {
    out.push('', agent.status === 'not run' ? 'It never started: no journal.' : 'No journal for it here.');
    return `${printable(out.join('\n'))}\n`;
  }
  if (transcript.children.length > 0) out.push(`spawned: ${transcript.children.join(', ')}`);
  const origin = transcript.startedAt ?? 0;
  const since = (ms: number): string => `+${formatDuration(Math.max(0, ms - origin))}`;
  const text = (value: string, indent = '    '): string => block(value, indent, options.full === true);
  out.push('', 'task:', text(transcript.task, '  '));
  if (transcript.context.length > 0)
    out.push(`context: ${transcript.context.length} section(s)${options.inputs ? ' (see the inputs)' : ''}`);
  for (const notice of [...transcript.warnings.map((w) => `${w.code}: ${w.message}`), ...transcript.notices])
    out.push(`warning: ${notice}`);
  for (const entry of transcript.preamble) out.push(entryText(entry, since, text));
  for (const round of transcript.rounds) {
    out.push('', `── round ${round.round} ${since(round.at)} ${'─'.repeat(40)}`);
    if (options.inputs && round.input) {
      const input = round.input;
      out.push('  input:');
      input.context.forEach((section, index) => {
        out.push(`    [context ${index + 1}]`, text(section, '      '));
      });
      out.push('    [task]', text(input.task, '      '));
      input.history.forEach((entry, index) => {
        out.push(
          `    [history ${index + 1}${entry.superseded ? ', superseded' : ''}]`,
          text(entry.text, '      '),
        );
      });
      for (const state of input.states) out.push(`    [state ${state.key}]`, text(state.text, '      '));
    }
    for (const entry of round.entries) out.push(entryText(entry, since, text));
  }
  const outcome = transcript.outcome;
  out.push('');
  if (outcome === undefined) out.push('no outcome: the journal ends without Completed or Failed');
  else if (outcome.status === 'completed')
    out.push(
      `completed ${since(outcome.at)}:`,
      text(outcome.result === undefined ? (outcome.answer ?? '') : jsonText(outcome.result), '  '),
    );
  else
    out.push(
      `failed ${since(outcome.at)}: ${outcome.reason ?? 'failed'}${outcome.error ? ` (${outcome.error.code})` : ''}`,
      text(outcome.error?.message ?? '', '  '),
    );
  return `${out.map(printable).join('\n')}\n`;
}

function entryText(
  entry: TranscriptEntry,
  since: (ms: number) => string,
  text: (value: string, indent?: string) => string,
): string {
  switch (entry.kind) {
    case 'request':
      return requestText(entry, since);
    case 'text':
      return `  model ${since(entry.at)}:\n${text(entry.text)}`;
    case 'note':
      return `  ${entry.note.replace('_', ' ')} ${since(entry.at)}:\n${text(entry.text)}`;
    case 'tool':
      return toolText(entry, since, text);
    case 'state':
      return `  state ${entry.key} ${entry.text === null ? 'removed' : 'replaced'}${entry.superseded > 0 ? ` (${entry.superseded} earlier display(s) superseded)` : ''}`;
    case 'resumed':
      return `  restarted from the journal ${since(entry.at)}: continues at round ${entry.nextRound}${entry.pendingCallIds.length > 0 ? `; cut off: ${entry.pendingCallIds.join(', ')}` : ''}${entry.awaitingCallIds.length > 0 ? `; waiting again: ${entry.awaitingCallIds.join(', ')}` : ''}`;
    case 'approval':
      return `  ${entry.decision} ${entry.tool} (${entry.callId})${entry.by ? ` by ${entry.by}` : ''}${entry.reason ? `: ${entry.reason}` : ''}`;
    default:
      return '';
  }
}

function requestText(entry: RequestEntry, since: (ms: number) => string): string {
  const receipt = entry.receipt;
  const parts = [
    `  model request${entry.step === undefined ? '' : ` step ${entry.step}`} ${since(entry.at)}`,
  ];
  if (receipt) {
    parts.push(
      `${formatTokenCount(receipt.usage.inputTokens, sideEstimated(receipt.usage, 'input'))} in / ${formatTokenCount(receipt.usage.outputTokens, sideEstimated(receipt.usage, 'output'))} out`,
      formatDuration(entry.end === undefined ? receipt.latencyMs : entry.end - entry.at),
    );
    if (receipt.queuedMs !== undefined) parts.push(`queued ${formatDuration(receipt.queuedMs)}`);
    if (receipt.retries > 0) parts.push(`${receipt.retries} retries`);
  } else parts.push('no receipt: cut off');
  if (entry.stopReason) parts.push(`stop ${entry.stopReason}`);
  if (entry.errorCode) parts.push(`failed: ${entry.errorCode}`);
  const retries = (receipt?.retryLog ?? []).map(
    (retry) =>
      `    retry: ${retry.code}${retry.status === undefined ? '' : ` (HTTP ${retry.status})`} at +${formatDuration(retry.atMs)}, waited ${formatDuration(retry.delayMs)}`,
  );
  return [parts.join(' · '), ...retries].join('\n');
}

function toolText(
  entry: ToolEntry,
  since: (ms: number) => string,
  text: (value: string, indent?: string) => string,
): string {
  const result = entry.result;
  const status = entry.interrupted
    ? 'interrupted'
    : result === undefined
      ? 'no result'
      : result.refused
        ? 'refused'
        : result.ok
          ? 'ok'
          : 'failed';
  const lines = [
    `  tool ${entry.name}${entry.modelName !== entry.name ? ` (as ${entry.modelName})` : ''} ${status}${entry.end === undefined ? '' : ` ${formatDuration(entry.end - entry.at)}`} ${since(entry.at)} · call ${entry.callId}${entry.childAgentId ? ` · spawned ${entry.childAgentId}` : ''}`,
  ];
  if (entry.args !== undefined) lines.push('    args:', text(jsonText(entry.args), '      '));
  else if (entry.rawArgs !== undefined)
    lines.push('    args (did not parse):', text(entry.rawArgs, '      '));
  if (entry.approval) lines.push(`    ${approvalText(entry.approval)}`);
  if (entry.wait)
    lines.push(
      `    waited ${entry.wait.instructedAt === undefined ? '(no instruction arrived)' : formatDuration(entry.wait.instructedAt - entry.wait.at)} for instruction #${entry.wait.index}${entry.wait.instruction === undefined ? '' : `: ${entry.wait.instruction}`}`,
    );
  if (result) {
    lines.push(
      `    result${result.projectionAccepted ? '' : ' (did not fit the budget)'}:`,
      text(result.text, '      '),
    );
  }
  return lines.join('\n');
}

/** One line for a permission decision: who decided what, after how long, by which rule. */
export function approvalText(approval: ApprovalInfo): string {
  const decision =
    approval.approved === undefined
      ? 'waiting for approval (no decision recorded)'
      : `${approval.approved ? 'approved' : 'denied'} by ${approval.by ?? 'unknown'}${approval.decider ? ` (${approval.decider})` : ''}`;
  const waited =
    approval.requestedAt !== undefined && approval.decidedAt !== undefined
      ? ` after ${formatDuration(approval.decidedAt - approval.requestedAt)}`
      : '';
  const why = approval.decisionReason ?? approval.reason;
  return `${decision}${waited} · rule ${approval.rule}${why ? ` · ${why}` : ''}`;
}

function jsonText(value: unknown): string {
  return JSON.stringify(redactValue(value), null, 2) ?? String(value);
}

/** `value` indented; cut to SHOW_TEXT_LINES lines (and 200 characters a line) unless `full`. */
function block(value: string, indent: string, full: boolean): string {
  const lines = printable(value).split('\n');
  const shown = full
    ? lines
    : lines.slice(0, SHOW_TEXT_LINES).map((line) => (line.length > 200 ? `${line.slice(0, 199)}…` : line));
  const more =
    full || lines.length <= SHOW_TEXT_LINES
      ? ''
      : `\n${indent}… ${lines.length - SHOW_TEXT_LINES} more line(s); --full prints them`;
  return `${shown.map((line) => `${indent}${line}`).join('\n')}${more}`;
}

/**
 * The agent of `agents` that `query` names: its id, plan index, plan label (of one plan entry), or a
 * unique id prefix; otherwise every agent the label or the prefix matches (none, or more than one).
 */
export function findAgent<A extends Pick<ReportAgent, 'agentId' | 'index' | 'label'>>(
  agents: readonly A[],
  query: string,
): A | A[] {
  const exact = agents.find((agent) => agent.agentId === query);
  if (exact) return exact;
  if (/^\d+$/.test(query)) {
    const byIndex = agents.filter((agent) => agent.index === Number(query));
    if (byIndex.length > 0) return byIndex.at(-1) as A;
  }
  // A label names one plan entry, whose last attempt is meant; a label two entries share (a data
  // set with a repeated id) names neither.
  const byLabel = new Map<number | null, A>();
  for (const agent of agents) if (agent.label === query) byLabel.set(agent.index, agent);
  if (byLabel.size === 1) return byLabel.values().next().value as A;
  if (byLabel.size > 1) return [...byLabel.values()];
  const prefix = query.replace(/…$/, '');
  const matches = agents.filter((agent) => agent.agentId.startsWith(prefix));
  return matches.length === 1 ? (matches[0] as A) : matches;
}
