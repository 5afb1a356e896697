/**
 * The HTML report's approvals section: every decision on an agent's tool call, grouped by agent
 * (who asked, for what, who decided, when, why). A compact section until the report's transcript
 * view shows approvals in place.
 */
import type { ApprovalRecord } from './approvals.ts';
import { deciderText } from './approvals.ts';
import { excerpt } from './format.ts';
import { esc } from './html-charts.ts';

/** The section, or '' when the run had no approvals or denials. */
export function approvalsSection(records: readonly ApprovalRecord[]): string {
  if (records.length === 0) return '';
  const denied = records.filter((record) => !record.approved).length;
  const byAgent = new Map<string, ApprovalRecord[]>();
  for (const record of records) {
    const list = byAgent.get(record.agentId) ?? [];
    list.push(record);
    byAgent.set(record.agentId, list);
  }
  const rows = [...byAgent.entries()].flatMap(([agentId, list]) =>
    list.map((record, index) => {
      const call = record.args === undefined ? '' : JSON.stringify(record.args);
      return `<tr>${index === 0 ? `<td rowspan="${list.length}">${esc(agentId)}<br><span class="sub">${esc(record.agent)}</span></td>` : ''}<td>${esc(record.tool)}</td><td class="${record.approved ? 'completed' : 'failed'}">${record.approved ? 'approved' : 'denied'}</td><td>${esc(deciderText(record))}</td><td>${esc(record.decidedAt)}</td><td>${esc(record.rule)}</td><td>${call ? `<details><summary>${esc(excerpt(call, 60))}</summary><pre>${esc(call)}</pre></details>` : ''}${esc(record.reason ?? record.asked ?? '')}</td></tr>`;
    }),
  );
  return `<section><h2>Approvals (${records.length - denied} approved, ${denied} denied)</h2>
<table><thead><tr><th>agent</th><th>tool</th><th>decision</th><th>by</th><th>when</th><th>rule</th><th>call / reason</th></tr></thead><tbody>${rows.join('')}</tbody></table>
</section>`;
}
