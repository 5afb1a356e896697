/** The SVG pieces of the HTML report: the timeline of agents across threads, and bar charts. */
import { formatDuration, printable, shortId } from './format.ts';
import type { ReportAgent, Timeline } from './timeline.ts';

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

const LABEL_WIDTH = 190;
const PLOT_WIDTH = 860;
const ROW = 20;
const GROUP_HEADER = 24;
const AXIS = 26;
const TOOL_COLORS = [
  '#2563eb',
  '#db2777',
  '#65a30d',
  '#7c3aed',
  '#0891b2',
  '#c2410c',
  '#0d9488',
  '#be123c',
  '#4f46e5',
  '#a16207',
];

/** A colour per tool name used in `agents`, stable for a given set of tools (sorted by name). */
export function toolColors(agents: readonly ReportAgent[]): Map<string, string> {
  const tools = [
    ...new Set(agents.flatMap((agent) => agent.spans.filter((s) => s.kind === 'tool').map((s) => s.label))),
  ].sort();
  return new Map(tools.map((tool, index) => [tool, TOOL_COLORS[index % TOOL_COLORS.length] ?? '#2563eb']));
}

function niceStep(duration: number): number {
  const target = Math.max(1, duration / 8);
  const power = 10 ** Math.floor(Math.log10(target));
  for (const factor of [1, 2, 5, 10]) if (power * factor >= target) return power * factor;
  return power * 10;
}

/** Agents by thread, each thread's agents by start time; agents that never started come last. */
function byThread(agents: readonly ReportAgent[]): [string, ReportAgent[]][] {
  const groups = new Map<string, ReportAgent[]>();
  for (const agent of agents) {
    const key =
      agent.start === undefined
        ? 'not started'
        : agent.hostId === null
          ? 'thread ?'
          : `thread ${agent.hostId}`;
    const group = groups.get(key) ?? [];
    group.push(agent);
    groups.set(key, group);
  }
  for (const group of groups.values()) group.sort((a, b) => (a.start ?? 0) - (b.start ?? 0));
  return [...groups.entries()].sort(([a], [b]) =>
    a === 'not started' ? 1 : b === 'not started' ? -1 : a.localeCompare(b),
  );
}

/** The timeline: one row per agent, grouped by thread, with model turns, tool calls and waits. */
export function timelineSvg(timeline: Timeline, agents: readonly ReportAgent[]): string {
  const colors = toolColors(agents);
  const duration = Math.max(timeline.duration, 1);
  const x = (ms: number): number => LABEL_WIDTH + (Math.max(0, ms) / duration) * PLOT_WIDTH;
  const groups = byThread(agents);
  const parts: string[] = [];
  let y = AXIS;
  for (const [name, members] of groups) {
    parts.push(
      `<text class="group" x="4" y="${y + 16}">${esc(name)} (${members.length} agent${members.length === 1 ? '' : 's'})</text>`,
    );
    parts.push(
      `<line class="group-line" x1="0" x2="${LABEL_WIDTH + PLOT_WIDTH}" y1="${y + 21}" y2="${y + 21}"/>`,
    );
    y += GROUP_HEADER;
    for (const agent of members) {
      parts.push(agentRow(agent, y, x, colors));
      y += ROW;
    }
  }
  const step = niceStep(duration);
  const ticks: string[] = [];
  for (let t = 0; t <= duration + 1; t += step) {
    ticks.push(
      `<line class="tick" x1="${x(t)}" x2="${x(t)}" y1="${AXIS - 6}" y2="${y}"/><text class="tick-label" x="${x(t)}" y="${AXIS - 10}">${formatDuration(t)}</text>`,
    );
  }
  const height = y + 8;
  return `<svg class="timeline" viewBox="0 0 ${LABEL_WIDTH + PLOT_WIDTH + 30} ${height}" width="100%" role="img" aria-label="Timeline of agents across threads">${ticks.join('')}${parts.join('')}</svg>`;
}

function agentRow(
  agent: ReportAgent,
  y: number,
  x: (ms: number) => number,
  colors: Map<string, string>,
): string {
  const label = `${agent.parentId ? '↳ ' : ''}${shortId(agent.agentId)} ${agent.agent}`;
  const out = [
    `<g class="row status-${agent.status.replace(' ', '-')}" data-agent="${esc(agent.agentId)}">`,
    `<text class="label" x="4" y="${y + 14}">${esc(label.length > 30 ? `${label.slice(0, 29)}…` : label)}</text>`,
  ];
  if (agent.start !== undefined && agent.end !== undefined) {
    const width = Math.max(2, x(agent.end) - x(agent.start));
    const title = `${agent.agentId} (${agent.agent}) ${agent.status}${agent.reason ? ` (${agent.reason})` : ''}: ${formatDuration(agent.end - agent.start)}, ${agent.rounds} round(s)`;
    out.push(
      `<rect class="bar" x="${x(agent.start)}" y="${y + 2}" width="${width}" height="${ROW - 4}" rx="3"><title>${esc(title)}</title></rect>`,
    );
    for (const span of agent.spans) {
      const sx = x(span.start);
      const sw = Math.max(1.5, x(span.end) - sx);
      const tip = `${span.label}${span.ok === false ? ' (failed)' : ''}: ${formatDuration(span.end - span.start)}`;
      if (span.kind === 'model')
        out.push(
          `<rect class="model" x="${sx}" y="${y + 3}" width="${sw}" height="4"><title>${esc(`model ${tip}`)}</title></rect>`,
        );
      else if (span.kind === 'wait')
        out.push(
          `<rect class="wait" x="${sx}" y="${y + 8}" width="${sw}" height="8"><title>${esc(`waiting for an instruction; got: ${tip}`)}</title></rect>`,
        );
      else
        out.push(
          `<rect class="tool${span.ok === false ? ' tool-failed' : ''}" x="${sx}" y="${y + 8}" width="${sw}" height="8" fill="${colors.get(span.label) ?? '#2563eb'}"><title>${esc(tip)}</title></rect>`,
        );
    }
    for (const start of agent.roundStarts)
      out.push(`<line class="round" x1="${x(start)}" x2="${x(start)}" y1="${y + 2}" y2="${y + ROW - 2}"/>`);
  } else {
    out.push(`<text class="muted" x="${LABEL_WIDTH + 4}" y="${y + 14}">${esc(agent.status)}</text>`);
  }
  out.push('</g>');
  return out.join('');
}

/** The tools used in the timeline with their colours. */
export function toolLegend(agents: readonly ReportAgent[]): string {
  return [...toolColors(agents)]
    .map(([tool, color]) => `<span class="key"><i style="background:${color}"></i>${esc(tool)}</span>`)
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
    const label = row.label.length > 30 ? `${row.label.slice(0, 29)}…` : row.label;
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
    .map((agent) => ({ label: `${agent.agentId} ${agent.agent}`, values: [...value(agent)] }));
  const rest = sorted.slice(limit);
  if (rest.length > 0) {
    const sums = value(rest[0] as ReportAgent).map((_, part) =>
      rest.reduce((sum, agent) => sum + (value(agent)[part] ?? 0), 0),
    );
    rows.push({ label: `${rest.length} others`, values: sums });
  }
  return rows;
}
