/** The SVG pieces of the HTML report: the timeline of agents across threads, and bar charts. */
import { formatDuration, printable, shortId } from './format.ts';
import type { ReportAgent, RunMark, Span, Timeline } from './timeline.ts';

/**
 * Escapes text for HTML and breaks `://` so no URL in agent output reads as a link or a fetch;
 * credentials are masked and control characters dropped first ({@link printable}).
 */
export function esc(text: string): string {
  return printable(text)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;')
    .replace(/:\/\//g, ':&#47;&#47;');
}

const LABEL_WIDTH = 210;
const PLOT_WIDTH = 860;
const ROW = 20;
const GROUP_HEADER = 24;
const AXIS = 26;
const RUN_LANE = 22;

/** Colours of troupe's own tools: the same in every report. */
const BUILTIN_TOOL_COLORS: Readonly<Record<string, string>> = {
  read_file: '#16a34a',
  list_dir: '#65a30d',
  glob: '#84cc16',
  grep: '#0d9488',
  search_replace: '#ea580c',
  write_file: '#c2410c',
  run_terminal_cmd: '#7c3aed',
  todo_write: '#a16207',
  web_fetch: '#0891b2',
  web_search: '#0284c7',
  complete_task: '#db2777',
  wait_for_instruction: '#b45309',
  spawn_agent: '#2563eb',
  send_instruction: '#4f46e5',
  await_agents: '#1d4ed8',
};

/**
 * The colour of a tool, by its name alone: fixed for troupe's tools, and for any other name a hue
 * from a hash of the name, so a tool keeps its colour from one report to the next.
 */
export function toolColor(name: string): string {
  const fixed = BUILTIN_TOOL_COLORS[name];
  if (fixed !== undefined) return fixed;
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i += 1) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return `hsl(${hash % 360},62%,42%)`;
}

/** The tool names used by `agents`, sorted. */
export function toolNames(agents: readonly ReportAgent[]): string[] {
  return [
    ...new Set(agents.flatMap((agent) => agent.spans.filter((s) => s.kind === 'tool').map((s) => s.label))),
  ].sort();
}

function niceStep(duration: number): number {
  const target = Math.max(1, duration / 8);
  const power = 10 ** Math.floor(Math.log10(target));
  for (const factor of [1, 2, 5, 10]) if (power * factor >= target) return power * factor;
  return power * 10;
}

/**
 * Agents by the thread they started on (so a thread crash shows among the agents it took), each
 * thread's agents by start time; agents that never started come last.
 */
function byThread(agents: readonly ReportAgent[]): [string, ReportAgent[]][] {
  const groups = new Map<string, ReportAgent[]>();
  for (const agent of agents) {
    const host = agent.hostIds[0] ?? agent.hostId;
    // A journal's own agent (`troupe run`, `chat`: index and parent null) ran in the CLI's process.
    const key =
      agent.start === undefined
        ? 'not started'
        : host !== null
          ? `thread ${host}`
          : agent.index === null && agent.parentId === null
            ? 'this process'
            : 'thread ?';
    const group = groups.get(key) ?? [];
    group.push(agent);
    groups.set(key, group);
  }
  for (const group of groups.values()) group.sort((a, b) => (a.start ?? 0) - (b.start ?? 0));
  return [...groups.entries()].sort(([a], [b]) =>
    a === 'not started' ? 1 : b === 'not started' ? -1 : a.localeCompare(b, 'en', { numeric: true }),
  );
}

/**
 * The timeline: a lane for the run (sessions, provider pauses), then one row per agent grouped by
 * thread, with model requests, queueing, retry backoffs, tool calls, waits, time down after a
 * crash, and the thread crashes themselves. `anchors` maps an agent id to its transcript's anchor.
 */
export function timelineSvg(
  timeline: Timeline,
  agents: readonly ReportAgent[],
  anchors: ReadonlyMap<string, string>,
  window: { readonly from: number; readonly to: number } = { from: 0, to: timeline.duration },
): string {
  const duration = Math.max(window.to - window.from, 1);
  const x = (ms: number): number =>
    LABEL_WIDTH + (Math.min(duration, Math.max(0, ms - window.from)) / duration) * PLOT_WIDTH;
  const parts: string[] = [];
  let y = AXIS;
  parts.push(runLane(timeline.marks, y, x));
  y += RUN_LANE;
  for (const [name, members] of byThread(agents)) {
    const top = y;
    parts.push(
      `<text class="group" x="4" y="${y + 16}">${esc(name)} (${members.length} agent${members.length === 1 ? '' : 's'})</text>`,
    );
    parts.push(
      `<line class="group-line" x1="0" x2="${LABEL_WIDTH + PLOT_WIDTH}" y1="${y + 21}" y2="${y + 21}"/>`,
    );
    y += GROUP_HEADER;
    for (const agent of members) {
      parts.push(agentRow(agent, y, x, anchors.get(agent.agentId)));
      y += ROW;
    }
    const hostId = name.startsWith('thread ') ? Number(name.slice('thread '.length)) : Number.NaN;
    for (const mark of timeline.marks) {
      if ((mark.kind !== 'crash' && mark.kind !== 'respawn') || mark.hostId !== hostId) continue;
      const cx = x(mark.at);
      parts.push(
        `<g class="${mark.kind}"><line x1="${cx}" x2="${cx}" y1="${top + 4}" y2="${y}"/><text x="${cx + 3}" y="${top + 16}">${mark.kind === 'crash' ? '✕ crashed' : '↻ respawned'}</text><title>${esc(mark.label)}</title></g>`,
      );
    }
  }
  const step = niceStep(duration);
  const ticks: string[] = [];
  for (let t = Math.ceil(window.from / step) * step; t <= window.to + 1; t += step) {
    ticks.push(
      `<line class="tick" x1="${x(t)}" x2="${x(t)}" y1="${AXIS - 6}" y2="${y}"/><text class="tick-label" x="${x(t)}" y="${AXIS - 10}">${formatDuration(t)}</text>`,
    );
  }
  return `<svg class="timeline" viewBox="0 0 ${LABEL_WIDTH + PLOT_WIDTH + 30} ${y + 8}" width="100%" role="img" aria-label="Timeline of the run: agents across threads from the run's first event">${ticks.join('')}${parts.join('')}</svg>`;
}

function runLane(marks: readonly RunMark[], y: number, x: (ms: number) => number): string {
  const out = [`<g class="run-lane"><text class="group" x="4" y="${y + 14}">run</text>`];
  for (const mark of marks) {
    if (mark.kind === 'session') {
      const end = mark.end ?? Number.POSITIVE_INFINITY;
      out.push(
        `<rect class="session" x="${x(mark.start)}" y="${y + 4}" width="${Math.max(2, x(end) - x(mark.start))}" height="10" rx="2"><title>${esc(`session: ${mark.label}`)}</title></rect>`,
      );
    } else if (mark.kind === 'backoff') {
      out.push(
        `<rect class="provider-pause" x="${x(mark.start)}" y="${y + 4}" width="${Math.max(2, x(mark.end) - x(mark.start))}" height="10"><title>${esc(mark.label)}</title></rect>`,
      );
    } else {
      out.push(
        `<text class="${mark.kind === 'crash' ? 'crash-mark' : 'respawn-mark'}" x="${x(mark.at) - 4}" y="${y + 14}">${mark.kind === 'crash' ? '✕' : '↻'}<title>${esc(mark.label)}</title></text>`,
      );
    }
  }
  out.push('</g>');
  return out.join('');
}

function spanTip(span: Span): string {
  const time = formatDuration(span.end - span.start);
  switch (span.kind) {
    case 'model':
      return `model request ${span.label}: ${time}${span.detail ? `, ${span.detail}` : ''}`;
    case 'queued':
      return `${span.label}: ${span.detail ?? 'waiting for a provider slot'}`;
    case 'backoff':
      return `${span.detail ?? 'backoff'} after ${span.label}: ${time}`;
    case 'wait':
      return `waiting for an instruction: ${time}; got: ${span.label}`;
    case 'down':
      return `${span.label}: ${time}`;
    default:
      return `${span.label}${span.ok === false ? ' (failed)' : span.ok === undefined ? ' (no result)' : ''}: ${time}${span.detail ? `, ${span.detail}` : ''}`;
  }
}

function agentRow(
  agent: ReportAgent,
  y: number,
  x: (ms: number) => number,
  anchor: string | undefined,
): string {
  const moved = agent.hostIds.length > 1 ? `→t${agent.hostIds.slice(1).join('→t')}` : '';
  const head = [
    agent.parentId ? '↳' : '',
    shortId(agent.agentId),
    agent.label ? `[${agent.label}]` : '',
    agent.agent,
  ]
    .filter((part) => part !== '')
    .join(' ');
  const room = 34 - moved.length;
  const label = `${head.length > room ? `${head.slice(0, room - 1)}…` : head}${moved ? ` ${moved}` : ''}`;
  const out = [
    `<g class="row status-${agent.status.replace(' ', '-')}" data-agent="${esc(agent.agentId)}"${anchor ? ` data-t="${anchor}"` : ''}>`,
    `<text class="label" x="4" y="${y + 14}">${esc(label)}<title>${esc(`${agent.agentId} (${agent.agent}${agent.model ? `, ${agent.model}` : ''})`)}</title></text>`,
  ];
  if (agent.start !== undefined && agent.end !== undefined) {
    const width = Math.max(2, x(agent.end) - x(agent.start));
    const title = `${agent.agentId} (${agent.agent}${agent.model ? `, ${agent.model}` : ''}) ${agent.status}${agent.reason ? ` (${agent.reason})` : ''}: ${formatDuration(agent.end - agent.start)}${agent.inherited ? ' of its own attempt' : ''}, ${agent.rounds} round(s), ${agent.steps} request(s)${agent.inherited ? ` (${agent.inherited.rounds} and ${agent.inherited.steps} inherited from ${agent.inherited.agentId})` : ''}; click for its transcript`;
    out.push(
      `<rect class="bar" x="${x(agent.start)}" y="${y + 2}" width="${width}" height="${ROW - 4}" rx="3"><title>${esc(title)}</title></rect>`,
    );
    for (const span of agent.spans) {
      const sx = x(span.start);
      const sw = Math.max(1.5, x(span.end) - sx);
      const tip = `<title>${esc(spanTip(span))}</title>`;
      switch (span.kind) {
        case 'model':
          out.push(`<rect class="model" x="${sx}" y="${y + 3}" width="${sw}" height="4">${tip}</rect>`);
          break;
        case 'queued':
          out.push(`<rect class="queued" x="${sx}" y="${y + 3}" width="${sw}" height="4">${tip}</rect>`);
          break;
        case 'backoff':
          out.push(`<rect class="backoff" x="${sx}" y="${y + 3}" width="${sw}" height="4">${tip}</rect>`);
          break;
        case 'wait':
          out.push(`<rect class="wait" x="${sx}" y="${y + 8}" width="${sw}" height="8">${tip}</rect>`);
          break;
        case 'down':
          out.push(
            `<rect class="down" x="${sx}" y="${y + 2}" width="${sw}" height="${ROW - 4}">${tip}</rect>`,
          );
          break;
        default:
          out.push(
            `<rect class="tool${span.ok === false ? ' tool-failed' : span.ok === undefined ? ' tool-open' : ''}" x="${sx}" y="${y + 8}" width="${sw}" height="8" fill="${toolColor(span.label)}">${tip}</rect>`,
          );
      }
    }
    for (const start of agent.roundStarts)
      out.push(`<line class="round" x1="${x(start)}" x2="${x(start)}" y1="${y + 2}" y2="${y + ROW - 2}"/>`);
    for (const marker of agent.markers) {
      const mx = x(marker.at);
      out.push(
        marker.kind === 'retry'
          ? `<path class="retry" d="M${mx - 3},${y + 1} L${mx + 3},${y + 1} L${mx},${y + 6} Z"><title>${esc(`retry: ${marker.label}`)}</title></path>`
          : `<path class="restart" d="M${mx - 4},${y + ROW - 1} L${mx + 4},${y + ROW - 1} L${mx},${y + ROW - 8} Z"><title>${esc(`restart: ${marker.label}`)}</title></path>`,
      );
    }
  } else {
    out.push(`<text class="muted" x="${LABEL_WIDTH + 4}" y="${y + 14}">${esc(agent.status)}</text>`);
  }
  out.push('</g>');
  return out.join('');
}

/** The tools used in the timeline with their colours. */
export function toolLegend(agents: readonly ReportAgent[]): string {
  return toolNames(agents)
    .map((tool) => `<span class="key"><i style="background:${toolColor(tool)}"></i>${esc(tool)}</span>`)
    .join('');
}

/** A horizontal bar chart: one bar per row, stacked segments. */
export function barChart(
  rows: readonly { label: string; values: readonly number[] }[],
  series: readonly { name: string; className: string }[],
  format: (value: number) => string,
): string {
  const max = Math.max(1e-12, ...rows.map((row) => row.values.reduce((a, b) => a + b, 0)));
  const height = rows.length * ROW + 8;
  const bars = rows.map((row, index) => {
    const y = index * ROW + 4;
    let offset = LABEL_WIDTH;
    const segments = row.values.map((value, part) => {
      const width = (value / max) * (PLOT_WIDTH - 120);
      const rect = `<rect class="${series[part]?.className ?? ''}" x="${offset}" y="${y + 2}" width="${Math.max(0, width)}" height="${ROW - 6}"><title>${esc(`${row.label}: ${series[part]?.name ?? ''} ${format(value)}`)}</title></rect>`;
      offset += width;
      return rect;
    });
    const total = row.values.reduce((a, b) => a + b, 0);
    const label = row.label.length > 34 ? `${row.label.slice(0, 33)}…` : row.label;
    return `<text class="label" x="4" y="${y + 14}">${esc(label)}</text>${segments.join('')}<text class="value" x="${offset + 6}" y="${y + 14}">${esc(format(total))}</text>`;
  });
  return `<svg class="chart" viewBox="0 0 ${LABEL_WIDTH + PLOT_WIDTH + 30} ${height}" width="100%" role="img">${bars.join('')}</svg>`;
}

/** Rows for the token and cost charts: the largest `limit` agents, the rest summed as "others". */
export function chartRows(
  agents: readonly ReportAgent[],
  value: (agent: ReportAgent) => readonly number[],
  limit: number,
): { label: string; values: number[] }[] {
  const sorted = [...agents].sort(
    (a, b) => value(b).reduce((x, y) => x + y, 0) - value(a).reduce((x, y) => x + y, 0),
  );
  const rows = sorted
    .slice(0, limit)
    .map((agent) => ({ label: `${shortId(agent.agentId)} ${agent.agent}`, values: [...value(agent)] }));
  const rest = sorted.slice(limit);
  if (rest.length > 0) {
    const sums = value(rest[0] as ReportAgent).map((_, part) =>
      rest.reduce((sum, agent) => sum + (value(agent)[part] ?? 0), 0),
    );
    rows.push({ label: `${rest.length} others`, values: sums });
  }
  return rows;
}
