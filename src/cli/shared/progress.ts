/**
 * How a running agent reads on a terminal: one short line per round, tool call and provider
 * receipt ("round 2 · read_file README.md"), and a summary of the outcome.
 */
import { INTERRUPTED_TOOL_RESULT } from '../../journal/constants.ts';
import type { AuditEvent } from '../../journal/events.ts';
import type { AgentOutcome } from '../../loop/types.ts';
import type { Usage } from '../../providers/types.ts';
import { printable } from '../../run-dir/format.ts';
import { COMPLETE_TASK } from '../../tools/builtin/orchestration.ts';
import { PROGRESS_ARG_CHARS } from './constants.ts';

/** Argument names shown first on a tool call's line, when the call has them. */
const SALIENT_ARGS = ['path', 'target_file', 'file', 'pattern', 'query', 'command', 'url'];

/** A count for people: `950`, `1.2k`, `12k`, `3.4M`. */
export function formatCount(count: number): string {
  if (count < 1000) return String(count);
  if (count < 1_000_000)
    return count < 10_000 ? `${(count / 1000).toFixed(1)}k` : `${Math.round(count / 1000)}k`;
  return `${(count / 1_000_000).toFixed(1)}M`;
}

/** A US-dollar amount, with enough digits to tell small runs apart. */
export function formatCost(usd: number): string {
  return `$${usd >= 1 ? usd.toFixed(2) : usd.toFixed(4)}`;
}

/** The progress line for a journalled event, or undefined for events that are not shown. */
export function progressLine(event: AuditEvent): string | undefined {
  switch (event.type) {
    case 'InferenceSubmitted': {
      const parts = [`round ${event.round}`, `~${formatCount(event.estimatedTokens)} tokens estimated`];
      if (event.captureFor !== undefined) parts.push(`freeform answer for ${event.captureFor}`);
      else if (typeof event.toolChoice === 'object') parts.push(`must call ${event.toolChoice.tool}`);
      return parts.join(' · ');
    }
    case 'ToolCall': {
      const shown = event.args ? argumentSummary(event.name, event.args) : 'unparseable arguments';
      return `round ${event.round} · ${event.modelName}${shown === '' ? '' : ` ${shown}`}`;
    }
    case 'ToolResult': {
      if (event.ok) return undefined;
      const round = `round ${event.round}`;
      if (event.text === INTERRUPTED_TOOL_RESULT) {
        return `${round} · ${event.name} was cut off before its result was recorded: not run again`;
      }
      return `${round} · ${event.name} ${event.refused ? 'refused' : 'failed'}: ${oneLine(event.text, 100)}`;
    }
    case 'ProviderReceipt': {
      const { receipt } = event;
      const parts = [
        `round ${event.round}`,
        `${formatCount(receipt.usage.inputTokens)} tokens in`,
        `${formatCount(receipt.usage.outputTokens)} out`,
        `${Math.round(receipt.latencyMs)} ms`,
      ];
      if (receipt.retries > 0)
        parts.push(`${receipt.retries} ${receipt.retries === 1 ? 'retry' : 'retries'}`);
      if (receipt.costUsd !== undefined && receipt.costUsd > 0) parts.push(formatCost(receipt.costUsd));
      return parts.join(' · ');
    }
    case 'HistoryAppended':
      return event.kind === 'reminder'
        ? `round ${event.round} · reminder: ${oneLine(event.text, 80)}`
        : undefined;
    case 'Waiting':
      return `waiting for instruction #${event.index + 1}`;
    case 'Instructed':
      return `instruction #${event.index + 1} received: ${oneLine(event.text, 80)}`;
    case 'Resumed': {
      const pending = event.pendingCallIds.length;
      const calls =
        pending === 0
          ? 'no call was cut off'
          : `${pending} call${pending === 1 ? '' : 's'} cut off (${event.pendingCallIds.join(', ')})`;
      return `resumed at round ${event.nextRound} · ${calls}`;
    }
    default:
      return undefined;
  }
}

/**
 * Sums up an outcome: `completed in 2 rounds · 5.7k tokens in · 51 out`; a failure adds a second
 * line with its reason, error code and message.
 */
export function outcomeSummary(outcome: AgentOutcome): string {
  const rounds = `${outcome.rounds} round${outcome.rounds === 1 ? '' : 's'}`;
  const usage = usageText(outcome.usage, outcome.costUsd);
  if (outcome.status === 'completed') return `completed in ${rounds} · ${usage}`;
  const { error } = outcome;
  return printable(
    `failed after ${rounds} · ${usage}\nreason: ${outcome.reason} · code: ${error.code} · ${error.message}`,
  );
}

/**
 * What a completed agent delivered: the `complete_task` result as JSON, or the answer text,
 * {@link printable} (credentials masked, no terminal control characters).
 */
export function resultText(outcome: Extract<AgentOutcome, { status: 'completed' }>): string {
  return printable(outcome.result === undefined ? outcome.answer : JSON.stringify(outcome.result, null, 2));
}

function usageText(usage: Usage, costUsd: number): string {
  const parts = [`${formatCount(usage.inputTokens)} tokens in`, `${formatCount(usage.outputTokens)} out`];
  if (costUsd > 0) parts.push(formatCost(costUsd));
  return parts.join(' · ');
}

function argumentSummary(name: string, args: Readonly<Record<string, unknown>>): string {
  if (name === COMPLETE_TASK) return '';
  const key = SALIENT_ARGS.find((candidate) => typeof args[candidate] === 'string');
  const value = key === undefined ? Object.values(args).find((item) => typeof item === 'string') : args[key];
  return typeof value === 'string' ? oneLine(value, PROGRESS_ARG_CHARS) : '';
}

function oneLine(text: string, max: number): string {
  const flat = printable(text).replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 3)}...` : flat;
}
