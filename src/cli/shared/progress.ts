/**
 * How a running agent reads on a terminal: its limits, one short line per model request (step),
 * tool call and receipt ("round 2 · read_file README.md"), with the tokens used against the
 * budget, and a summary of the outcome. Estimated counts (the server reported no usage) start
 * with `~`; an unknown cost reads `cost unknown`.
 */
import { INTERRUPTED_TOOL_RESULT } from '../../journal/constants.ts';
import type { AuditEvent, StartedWarning } from '../../journal/events.ts';
import { redactValue } from '../../journal/redact.ts';
import type { AgentLimits, AgentOutcome } from '../../loop/types.ts';
import type { Usage } from '../../providers/types.ts';
import { formatTokens, printable } from '../../run-dir/format.ts';
import { COMPLETE_TASK } from '../../tools/builtin/orchestration.ts';
import { PROGRESS_ARG_CHARS } from './constants.ts';

/** Argument names shown first on a tool call's line, when the call has them. */
const SALIENT_ARGS = ['path', 'target_file', 'file', 'pattern', 'query', 'command', 'url'];

/** A US-dollar amount, with enough digits to tell small runs apart; null reads `unknown`. */
export function formatCost(usd: number | null): string {
  if (usd === null) return 'unknown';
  return `$${usd >= 1 ? usd.toFixed(2) : usd.toFixed(4)}`;
}

/** `32 steps · 1.0M tokens · no cost limit · no time limit`. */
export function limitsText(limits: AgentLimits): string {
  const parts = [
    limits.maxSteps === undefined ? 'the definition’s steps' : `${limits.maxSteps} steps`,
    limits.maxTotalTokens ? `${formatTokens(limits.maxTotalTokens)} tokens` : 'no token limit',
    limits.maxCostUsd ? formatCost(limits.maxCostUsd) : 'no cost limit',
    limits.wallClockMs ? `${formatTokens(limits.wallClockMs)} ms` : 'no time limit',
  ];
  return parts.join(' · ');
}

/** Where a run stands against its token budget, for the receipt lines. */
export interface BudgetState {
  limits: AgentLimits | undefined;
  /** Tokens used so far (input + output). */
  tokens: number;
  estimated: boolean;
}

/**
 * Formats progress with running totals: each receipt line says how many tokens the agent has used
 * of its budget. `start` carries the totals of a resumed journal.
 */
export class ProgressFormatter {
  readonly #budget: BudgetState;

  constructor(start: Partial<BudgetState> = {}) {
    this.#budget = { limits: start.limits, tokens: start.tokens ?? 0, estimated: start.estimated ?? false };
  }

  /** The lines for a journalled event (none for events that are not shown). */
  lines(event: AuditEvent): string[] {
    if (event.type === 'Started') {
      this.#budget.limits = event.limits;
      const lines = event.limits ? [`limits: ${limitsText(event.limits)}`] : [];
      for (const warning of event.warnings ?? []) lines.push(startedWarningLine(warning));
      for (const notice of event.notices ?? []) lines.push(`warning: ${notice}`);
      return lines;
    }
    const line = progressLine(event);
    if (event.type !== 'ProviderReceipt' || line === undefined) return line === undefined ? [] : [line];
    const { usage } = event.receipt;
    this.#budget.tokens += usage.inputTokens + usage.outputTokens;
    this.#budget.estimated ||= usage.estimated === true;
    const max = this.#budget.limits?.maxTotalTokens;
    const used = `${this.#budget.estimated ? '~' : ''}${formatTokens(this.#budget.tokens)}`;
    return [`${line} · ${max ? `${used} of ${formatTokens(max)} tokens used` : `${used} tokens used`}`];
  }
}

/** The progress line for a journalled event, or undefined for events that are not shown. */
/**
 * One warning of a Started event as `file:line:column: warning code: message`, as `agents
 * validate` prints a definition's problems: `file: ` alone when the place in it is not known (a
 * definition given as an object), nothing before `warning` when there is no file.
 */
export function startedWarningLine(warning: StartedWarning): string {
  const { file, line, column } = warning;
  const at = line === undefined ? '' : `:${line}:${column ?? 1}`;
  const where = file === undefined ? '' : `${file}${at}: `;
  return `${where}warning ${warning.code}: ${warning.message}`;
}

export function progressLine(event: AuditEvent): string | undefined {
  switch (event.type) {
    case 'InferenceSubmitted': {
      const parts = [`${where(event)}`, `~${formatTokens(event.estimatedTokens)} tokens estimated`];
      if ((event.request ?? 1) > 1) parts.push('continues the turn');
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
      const verb = event.refused ? 'refused' : 'failed';
      // Most failure texts already start `read_file failed: `: said once, not twice.
      const own = `${event.name} ${verb}: `;
      const reason = event.text.startsWith(own) ? event.text.slice(own.length) : event.text;
      return `${round} · ${own}${oneLine(reason, 100)}`;
    }
    case 'ProviderReceipt': {
      const { receipt } = event;
      const mark = estimateMarks(receipt.usage);
      const parts = [
        where(event),
        `${mark.input}${formatTokens(receipt.usage.inputTokens)} tokens in`,
        `${mark.output}${formatTokens(receipt.usage.outputTokens)} out${mark.note === '' ? '' : ` (estimated: ${mark.note ?? 'no usage reported'})`}`,
        `${Math.round(receipt.latencyMs)} ms`,
      ];
      if (receipt.retries > 0)
        parts.push(`${receipt.retries} ${receipt.retries === 1 ? 'retry' : 'retries'}`);
      if (receipt.costUsd !== undefined && receipt.costUsd > 0) parts.push(formatCost(receipt.costUsd));
      if (event.stopReason === 'length') parts.push('cut off by the output limit');
      if (event.errorCode !== undefined) parts.push(`failed: ${event.errorCode}`);
      return parts.join(' · ');
    }
    case 'HistoryAppended':
      if (event.kind === 'continuation')
        return `round ${event.round} · asked the model to continue its cut-off answer`;
      if (event.kind === 'capture_prompt') return `round ${event.round} · ${oneLine(event.text, 100)}`;
      return event.kind === 'reminder'
        ? `round ${event.round} · reminder: ${oneLine(event.text, 80)}`
        : undefined;
    case 'Waiting':
      return `waiting for instruction #${event.index + 1}`;
    case 'Instructed':
      return `instruction #${event.index + 1} received: ${oneLine(event.text, 80)}`;
    case 'Resumed': {
      const awaiting = event.awaitingCallIds ?? [];
      const cutOff = event.pendingCallIds.filter((id) => !awaiting.includes(id));
      const calls = (ids: readonly string[]): string =>
        `${ids.length} call${ids.length === 1 ? '' : 's'} (${ids.join(', ')})`;
      const parts = [`resumed at round ${event.nextRound}`];
      if (cutOff.length > 0) parts.push(`${calls(cutOff)} cut off`);
      if (awaiting.length > 0) parts.push(`${calls(awaiting)} waiting again`);
      if (parts.length === 1) parts.push('no call was cut off');
      return parts.join(' · ');
    }
    default:
      return undefined;
  }
}

/**
 * Sums up an outcome: `completed in 2 rounds (3 steps) · 5.7k tokens in · 51 out`; a failure adds
 * a second line with its reason, error code and message.
 */
export function outcomeSummary(outcome: AgentOutcome): string {
  const steps =
    outcome.steps === undefined ? '' : ` (${outcome.steps} step${outcome.steps === 1 ? '' : 's'})`;
  const rounds = `${outcome.rounds} round${outcome.rounds === 1 ? '' : 's'}${steps}`;
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
  // Masked by key as the journal masks it (`{"password": {...}}`), then as text.
  const { result } = outcome;
  return printable(result === undefined ? outcome.answer : JSON.stringify(redactValue(result), null, 2));
}

function usageText(usage: Usage, costUsd: number | null): string {
  const mark = estimateMarks(usage);
  const parts = [
    `${mark.input}${formatTokens(usage.inputTokens)} tokens in`,
    `${mark.output}${formatTokens(usage.outputTokens)} out`,
  ];
  if (mark.note !== '') parts.push(`(~ estimated: ${mark.note ?? 'the server reported no usage'})`);
  if (costUsd === null) parts.push('cost unknown (no price for this model)');
  else if (costUsd > 0) parts.push(formatCost(costUsd));
  return parts.join(' · ');
}

/**
 * The `~` before each side's count troupe estimated, and why when it estimated one side only (a
 * server that reported the other readably, `usage.estimatedSide`); `note` is '' when nothing was
 * estimated and undefined when everything was.
 */
function estimateMarks(usage: Usage): { input: string; output: string; note: string | undefined } {
  if (usage.estimated !== true) return { input: '', output: '', note: '' };
  switch (usage.estimatedSide) {
    case 'input':
      return { input: '~', output: '', note: 'the server reported no readable input count' };
    case 'output':
      return { input: '', output: '~', note: 'the server reported no readable output count' };
    default:
      return { input: '~', output: '~', note: undefined };
  }
}

/** `round 2 · step 3`, or `round 2` for journals of troupe 0.2. */
function where(event: { readonly round: number; readonly step?: number }): string {
  return event.step === undefined ? `round ${event.round}` : `round ${event.round} · step ${event.step}`;
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
