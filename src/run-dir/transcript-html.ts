/**
 * An agent's transcript as HTML for the report: collapsible sections for the task, system prompt
 * and context; each round with its input (built in the page from compact JSON when opened, so a
 * long run's report grows with its journal, not with rounds x input); every model request with its
 * usage, latency, queueing and retries; the model's text; every tool call with its arguments and
 * result (long texts cut, with a way to expand); state supersessions, waits, restarts, approvals;
 * the outcome; links to the parent and children.
 *
 * Every text goes through `esc` (masked, control characters removed, escaped) or, for the JSON
 * data, through `printable` and a script-safe serialization; structured values through
 * `redactValue` first.
 */
import { canonicalJson } from '../journal/canonical-json.ts';
import { redactValue } from '../journal/redact.ts';
import { REPORT_TEXT_MAX_CHARS, REPORT_TEXT_PREVIEW_CHARS } from './constants.ts';
import {
  estimateNote,
  formatCost,
  formatDuration,
  formatTokenCount,
  printable,
  sideEstimated,
} from './format.ts';
import { esc, toolColor } from './html-charts.ts';
import type { ReportAgent } from './timeline.ts';
import type { RequestEntry, ToolEntry, Transcript, TranscriptEntry } from './transcript.ts';
import { approvalText } from './transcript-text.ts';

/** How the page refers to agents: the anchor id of each agent id. */
export type AnchorOf = (agentId: string) => string | undefined;

/** A text as HTML: whole when short; else its start, with the rest (up to a bound) behind a toggle. */
export function clip(text: string, className = ''): string {
  const shown = printable(text);
  const cls = className === '' ? '' : ` class="${className}"`;
  if (shown.length <= REPORT_TEXT_PREVIEW_CHARS) return `<pre${cls}>${esc(shown)}</pre>`;
  const cut = shown.length > REPORT_TEXT_MAX_CHARS;
  const full = cut ? shown.slice(0, REPORT_TEXT_MAX_CHARS) : shown;
  return `<details class="more${className === '' ? '' : ` ${className}`}"><summary><span class="preview">${esc(shown.slice(0, REPORT_TEXT_PREVIEW_CHARS))}…</span><span class="expand">show all ${shown.length.toLocaleString('en-US')} characters</span></summary><pre>${esc(full)}</pre>${cut ? `<p class="sub">Cut at ${REPORT_TEXT_MAX_CHARS.toLocaleString('en-US')} characters; <code>troupe show</code> prints all of it.</p>` : ''}</details>`;
}

/** A structured value (tool arguments, result data) as masked, indented JSON. */
function json(value: unknown): string {
  return clip(JSON.stringify(redactValue(value), null, 2) ?? String(value), 'json');
}

const at = (ms: number, origin: number): string => `+${formatDuration(Math.max(0, ms - origin))}`;

/** The `<details>` of one agent's transcript; `dataIndex` names its round-input JSON block. */
export function transcriptHtml(
  agent: ReportAgent,
  anchor: string,
  anchorOf: AnchorOf,
  origin: number,
  dataIndex: number,
): string {
  const transcript = agent.transcript;
  const summary = `<summary><span class="dot status-${agent.status.replace(' ', '-')}"></span><b>${esc(agent.agentId)}</b> ${esc(agent.agent)}${agent.label ? ` <span class="tag">${esc(agent.label)}</span>` : ''}${agent.model ? ` <span class="sub">${esc(agent.model)}</span>` : ''} <span class="sub">· ${agent.steps} request${agent.steps === 1 ? '' : 's'} · ${agent.toolCalls} tool call${agent.toolCalls === 1 ? '' : 's'} · ${formatTokenCount(agent.usage.inputTokens + agent.usage.outputTokens, agent.usage.estimated)} tokens${agent.start !== undefined && agent.end !== undefined ? ` · ${formatDuration(agent.end - agent.start)}` : ''} ·</span> <span class="${agent.status.replace(' ', '-')}">${esc(agent.status)}${agent.reason ? ` (${esc(agent.reason)})` : ''}</span></summary>`;
  if (transcript === undefined) {
    return `<details class="transcript" id="${anchor}" data-agent="${esc(agent.agentId)}">${summary}<div class="t-body"><p class="sub">No journal: ${agent.status === 'not run' ? 'this agent never started' : 'its journal is not in this run directory'}.</p>${facts(agent, undefined, anchorOf)}</div></details>`;
  }
  const body = [
    facts(agent, transcript, anchorOf),
    section('Task', clip(transcript.task)),
    section(
      `System prompt (${printable(transcript.systemPrompt).length.toLocaleString('en-US')} characters)`,
      clip(transcript.systemPrompt),
    ),
    transcript.context.length > 0
      ? section(
          `Context (${transcript.context.length} section${transcript.context.length === 1 ? '' : 's'})`,
          transcript.context.map((text) => clip(text)).join(''),
        )
      : '',
    Object.keys(transcript.metadata).length > 0 ? section('Metadata', json(transcript.metadata)) : '',
    transcript.warnings.length + transcript.notices.length > 0
      ? `<ul class="warnings">${[
          ...transcript.warnings.map((w) => `<li>${esc(`${w.code}: ${w.message}`)}</li>`),
          ...transcript.notices.map((n) => `<li>${esc(n)}</li>`),
        ].join('')}</ul>`
      : '',
    transcript.preamble.length > 0
      ? `<ol class="entries">${transcript.preamble.map((entry) => entryHtml(entry, origin, anchorOf)).join('')}</ol>`
      : '',
    ...transcript.rounds.map((round, index) => {
      const input = round.input;
      const sections = input ? input.context.length + 1 + input.history.length + input.states.length : 0;
      const first = round.entries.find((entry): entry is RequestEntry => entry.kind === 'request');
      const inputHtml = input
        ? `<details class="input" data-data="${dataIndex}" data-round="${index}"><summary>Input of round ${round.round}: ${sections} section${sections === 1 ? '' : 's'} (${input.history.length} history entr${input.history.length === 1 ? 'y' : 'ies'}, ${input.states.length} state${input.states.length === 1 ? '' : 's'})${first ? `, ~${formatTokenCount(first.estimatedTokens, false)} tokens estimated` : ''}</summary><div class="input-body"><p class="sub">Opening this shows the input as the model got it (needs JavaScript).</p></div></details>`
        : '';
      return `<div class="round"><h4>Round ${round.round} <span class="sub">${at(round.at, origin)}</span></h4>${inputHtml}<ol class="entries">${round.entries.map((entry) => entryHtml(entry, origin, anchorOf)).join('')}</ol></div>`;
    }),
    outcomeHtml(agent, transcript, origin),
  ];
  return `<details class="transcript" id="${anchor}" data-agent="${esc(agent.agentId)}">${summary}<div class="t-body">${body.join('')}</div></details>`;
}

function section(title: string, content: string): string {
  return `<details class="sec"><summary>${esc(title)}</summary>${content}</details>`;
}

function facts(agent: ReportAgent, transcript: Transcript | undefined, anchorOf: AnchorOf): string {
  const link = (agentId: string): string => {
    const target = anchorOf(agentId);
    return target === undefined ? esc(agentId) : `<a href="#${target}">${esc(agentId)}</a>`;
  };
  const rows: [string, string][] = [];
  if (agent.parentId !== null) rows.push(['spawned by', link(agent.parentId)]);
  if (transcript && transcript.children.length > 0)
    rows.push(['spawned', transcript.children.map(link).join(', ')]);
  if (agent.index !== null)
    rows.push([
      'plan entry',
      `#${agent.index}${agent.label ? ` (id ${esc(agent.label)})` : ''}${agent.attempt > 1 ? `, attempt ${agent.attempt}` : ''}`,
    ]);
  if (transcript) {
    rows.push([
      'definition',
      `${esc(transcript.definition.name)}${transcript.definition.path ? ` <span class="sub">${esc(transcript.definition.path)}</span>` : ''}`,
    ]);
    rows.push(['provider / model', `${esc(transcript.provider)} / ${esc(transcript.model)}`]);
    rows.push(['tools offered', esc(transcript.tools.join(', ') || 'none')]);
    if (transcript.limits)
      rows.push([
        'limits',
        esc(
          `${transcript.limits.maxSteps} steps, ${transcript.limits.maxTotalTokens || 'unlimited'} tokens, ${transcript.limits.maxCostUsd ? `$${transcript.limits.maxCostUsd}` : 'no cost limit'}${transcript.limits.wallClockMs ? `, ${formatDuration(transcript.limits.wallClockMs)}` : ''}`,
        ),
      ]);
  }
  if (agent.hostId !== null)
    rows.push(['thread', `${agent.hostId}${agent.restarts > 0 ? `, restarted ${agent.restarts}×` : ''}`]);
  rows.push([
    'usage',
    `${formatTokenCount(agent.usage.inputTokens, sideEstimated(agent.usage, 'input'))} in / ${formatTokenCount(agent.usage.outputTokens, sideEstimated(agent.usage, 'output'))} out, ${formatCost(agent.costUsd)}${agent.retries > 0 ? `, ${agent.retries} retr${agent.retries === 1 ? 'y' : 'ies'}` : ''}`,
  ]);
  return `<dl class="facts">${rows.map(([key, value]) => `<dt>${esc(key)}</dt><dd>${value}</dd>`).join('')}</dl>`;
}

function entryHtml(entry: TranscriptEntry, origin: number, anchorOf: AnchorOf): string {
  switch (entry.kind) {
    case 'request':
      return requestHtml(entry, origin);
    case 'text':
      return `<li class="e-text"><div class="head"><b>model</b> <span class="sub">${at(entry.at, origin)}</span></div>${clip(entry.text)}</li>`;
    case 'note':
      return `<li class="e-note"><div class="head"><b>${esc(entry.note.replace('_', ' '))}</b> <span class="sub">${at(entry.at, origin)}</span></div>${clip(entry.text)}</li>`;
    case 'tool':
      return toolHtml(entry, origin, anchorOf);
    case 'state':
      return `<li class="e-state"><b>state</b> <code>${esc(entry.key)}</code> ${entry.text === null ? 'removed' : 'replaced'}${entry.superseded > 0 ? `: ${entry.superseded} earlier display${entry.superseded === 1 ? '' : 's'} superseded by a marker` : ''}${entry.text === null ? '' : clip(entry.text)}</li>`;
    case 'resumed':
      return `<li class="e-resumed"><b>restarted from the journal</b> <span class="sub">${at(entry.at, origin)}</span>: continues at round ${entry.nextRound}${entry.pendingCallIds.length > 0 ? `; ${entry.pendingCallIds.length} call${entry.pendingCallIds.length === 1 ? ' was' : 's were'} cut off (${esc(entry.pendingCallIds.join(', '))})` : ''}${entry.awaitingCallIds.length > 0 ? `; waiting again: ${esc(entry.awaitingCallIds.join(', '))}` : ''}</li>`;
    case 'approval':
      return `<li class="e-approval"><b>${entry.decision}</b> <code>${esc(entry.tool)}</code> (${esc(entry.callId)})${entry.by ? ` by ${esc(entry.by)}` : ''}${entry.reason ? `: ${esc(entry.reason)}` : ''} <span class="sub">${at(entry.at, origin)}</span></li>`;
    default:
      return '';
  }
}

function requestHtml(entry: RequestEntry, origin: number): string {
  const receipt = entry.receipt;
  const parts = [
    `<b>model request</b>${entry.step === undefined ? '' : ` step ${entry.step}`}${entry.request > 1 ? ` (request ${entry.request} of the round)` : ''}`,
    `<span class="sub">${at(entry.at, origin)}</span>`,
  ];
  if (receipt) {
    parts.push(
      `${formatTokenCount(receipt.usage.inputTokens, sideEstimated(receipt.usage, 'input'))} in / ${formatTokenCount(receipt.usage.outputTokens, sideEstimated(receipt.usage, 'output'))} out`,
      `${formatDuration(entry.end === undefined ? receipt.latencyMs : entry.end - entry.at)}`,
    );
    if (receipt.queuedMs !== undefined) parts.push(`queued ${formatDuration(receipt.queuedMs)}`);
    if (receipt.retries > 0)
      parts.push(`<span class="warn">${receipt.retries} retr${receipt.retries === 1 ? 'y' : 'ies'}</span>`);
    if (receipt.costUsd !== undefined && receipt.costUsd > 0) parts.push(formatCost(receipt.costUsd));
    const note = estimateNote(receipt.usage);
    if (note !== undefined) parts.push(`<span class="sub">~ ${note}</span>`);
  } else parts.push('<span class="failed">no receipt: cut off</span>');
  if (entry.stopReason) parts.push(`stop: ${esc(entry.stopReason)}`);
  if (entry.errorCode) parts.push(`<span class="failed">failed: ${esc(entry.errorCode)}</span>`);
  if (entry.captureFor) parts.push(`capture for ${esc(entry.captureFor)}`);
  if (entry.toolChoice !== undefined) parts.push(`tool choice: ${esc(JSON.stringify(entry.toolChoice))}`);
  const retries = (receipt?.retryLog ?? [])
    .map(
      (retry) =>
        `<li>${esc(retry.code)}${retry.status === undefined ? '' : ` (HTTP ${retry.status})`} at +${formatDuration(retry.atMs)}, retried after ${formatDuration(retry.delayMs)}</li>`,
    )
    .join('');
  return `<li class="e-request"><div class="head">${parts.join(' · ')}</div>${retries ? `<ul class="retries">${retries}</ul>` : ''}</li>`;
}

function toolHtml(entry: ToolEntry, origin: number, anchorOf: AnchorOf): string {
  const result = entry.result;
  const status = entry.interrupted
    ? '<span class="warn">interrupted</span>'
    : result === undefined
      ? '<span class="warn">no result</span>'
      : result.refused
        ? '<span class="warn">refused</span>'
        : result.ok
          ? '<span class="completed">ok</span>'
          : '<span class="failed">failed</span>';
  const child = entry.childAgentId === undefined ? undefined : anchorOf(entry.childAgentId);
  const head = [
    `<span class="chip" style="background:${toolColor(entry.name)}">${esc(entry.name)}</span>${entry.modelName !== entry.name ? ` <span class="sub">as ${esc(entry.modelName)}</span>` : ''}`,
    status,
    entry.end === undefined ? '' : formatDuration(entry.end - entry.at),
    `<span class="sub">${at(entry.at, origin)} · call ${esc(entry.callId)}</span>`,
    entry.childAgentId === undefined
      ? ''
      : `spawned ${child === undefined ? esc(entry.childAgentId) : `<a href="#${child}">${esc(entry.childAgentId)}</a>`}`,
  ].filter((part) => part !== '');
  const args =
    entry.args !== undefined
      ? json(entry.args)
      : entry.rawArgs !== undefined
        ? `<p class="sub">Arguments that did not parse:</p>${clip(entry.rawArgs)}`
        : '';
  const wait = entry.wait
    ? `<p class="e-wait">waited ${entry.wait.instructedAt === undefined ? '(no instruction arrived)' : formatDuration(entry.wait.instructedAt - entry.wait.at)} for instruction #${entry.wait.index}${entry.wait.instruction === undefined ? '' : ':'}</p>${entry.wait.instruction === undefined ? '' : clip(entry.wait.instruction)}`
    : '';
  const resultHtml = result
    ? `<div class="result"><p class="sub">result${result.projectionAccepted ? '' : ' (did not fit the budget: the model was told so instead)'}:</p>${clip(result.text)}${showData(entry) ? `<p class="sub">data:</p>${json(result.data)}` : ''}</div>`
    : '';
  const approval = entry.approval
    ? `<p class="e-approval ${entry.approval.approved === false ? 'failed' : ''}">${esc(approvalText(entry.approval))}</p>`
    : '';
  return `<li class="e-tool" data-tool="${esc(entry.name)}" data-call="${esc(entry.callId)}"><div class="head">${head.join(' · ')}</div>${args ? `<div class="args">${args}</div>` : ''}${approval}${wait}${resultHtml}</li>`;
}

/** A result's data when it says more than its text and the call's arguments already do. */
function showData(entry: ToolEntry): boolean {
  const data = entry.result?.data;
  if (data === undefined || entry.childAgentId !== undefined) return false;
  const same = (value: unknown): boolean =>
    value !== undefined && canonicalJson(value) === canonicalJson(data);
  if (entry.args !== undefined && (same(entry.args) || same(entry.args.result))) return false;
  try {
    return !same(JSON.parse(entry.result?.text ?? ''));
  } catch {
    return true;
  }
}

function outcomeHtml(agent: ReportAgent, transcript: Transcript, origin: number): string {
  const outcome = transcript.outcome;
  if (outcome === undefined)
    return `<div class="outcome interrupted"><b>No outcome:</b> the journal ends without Completed or Failed (the run was stopped while this agent ran).</div>`;
  if (outcome.status === 'completed')
    return `<div class="outcome completed"><b>Completed</b> <span class="sub">${at(outcome.at, origin)} · ${outcome.rounds} round${outcome.rounds === 1 ? '' : 's'}${outcome.steps === undefined ? '' : `, ${outcome.steps} step${outcome.steps === 1 ? '' : 's'}`}</span>${outcome.result === undefined ? clip(outcome.answer ?? '') : json(outcome.result)}</div>`;
  return `<div class="outcome failed"><b>Failed: ${esc(outcome.reason ?? agent.reason ?? 'failed')}</b> <span class="sub">${at(outcome.at, origin)}${outcome.error ? ` · ${esc(outcome.error.code)}` : ''}</span>${outcome.error ? clip(outcome.error.message) : ''}${outcome.error && Object.keys(outcome.error.fields).length > 0 ? json(outcome.error.fields) : ''}</div>`;
}

/**
 * The round inputs of one transcript as compact JSON for the page's script: every distinct text
 * once (`t`), the context and task as indexes, and per round the history (`[index, superseded]`)
 * and the states after it (`[keyIndex, textIndex]`). Texts are masked and cut like shown text.
 */
export function inputData(transcript: Transcript): string {
  const texts: string[] = [];
  const ids = new Map<string, number>();
  const id = (text: string): number => {
    let index = ids.get(text);
    if (index === undefined) {
      index = texts.length;
      const shown = printable(text);
      texts.push(shown.length > REPORT_TEXT_MAX_CHARS ? `${shown.slice(0, REPORT_TEXT_MAX_CHARS)}…` : shown);
      ids.set(text, index);
    }
    return index;
  };
  const data = {
    c: transcript.context.map(id),
    k: id(transcript.task),
    r: transcript.rounds.map((round) =>
      round.input
        ? {
            h: round.input.history.map((entry) => [id(entry.text), entry.superseded ? 1 : 0]),
            s: round.input.states.map((state) => [id(state.key), id(state.text)]),
          }
        : null,
    ),
    t: texts,
  };
  return scriptJson(data);
}

/** JSON that cannot end a `<script>` element or open a comment in it. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}
