/**
 * Approvals in the progress output: the requests waiting for a decision (the live display lists
 * them, the oldest first, and puts the key prompt under the oldest, which is the one `y`, `n` and
 * `a` answer) and one line per decision.
 */
import {
  type ApprovalDecision,
  type ApprovalRequest,
  NOT_REMEMBERABLE,
  rememberable,
} from '../protocol/approvals.ts';
import { LINE_EXCERPT_CHARS } from './constants.ts';
import { excerpt, shortId } from './format.ts';
import type { RunEvent } from './run-events.ts';
import { type Palette, palette } from './terminal-style.ts';

/** Requests shown in the live display at most; the rest are counted. */
export const APPROVAL_PANEL_ROWS = 4;

/** The waiting requests of a session, for the live display. */
export class ApprovalPanel {
  readonly #waiting = new Map<string, { readonly agent: string; readonly request: ApprovalRequest }>();

  /** Follows the session's events. */
  apply(event: RunEvent): void {
    if (event.type === 'approval')
      this.#waiting.set(event.request.requestId, { agent: event.agent, request: event.request });
    else if (event.type === 'decision' && event.requestId !== null) this.#waiting.delete(event.requestId);
    else if (event.type === 'ended') {
      for (const [id, entry] of this.#waiting)
        if (entry.request.agentId === event.line.agentId) this.#waiting.delete(id);
    }
  }

  /** Requests waiting now. */
  get size(): number {
    return this.#waiting.size;
  }

  /** Lines for the status block: the waiting requests and the prompt; none when nothing waits. */
  lines(clip: (text: string) => string, colours: Palette = palette(true)): string[] {
    if (this.#waiting.size === 0) return [];
    const { yellow, bold, reset } = colours;
    const entries = [...this.#waiting.values()];
    const lines = [
      `${yellow}${bold}${clip(`approval needed (${entries.length} waiting; other agents keep running):`)}${reset}`,
    ];
    entries.slice(0, APPROVAL_PANEL_ROWS).forEach(({ agent, request }, index) => {
      const line = `${index === 0 ? '▶' : ' '} ${shortId(request.agentId)} ${agent}: ${request.tool} ${excerpt(JSON.stringify(request.args), LINE_EXCERPT_CHARS)} (${request.reason})`;
      lines.push(index === 0 ? `${bold}${clip(line)}${reset}` : clip(line));
    });
    if (entries.length > APPROVAL_PANEL_ROWS)
      lines.push(clip(`  … ${entries.length - APPROVAL_PANEL_ROWS} more`));
    const first = entries[0]?.request;
    if (first) {
      lines.push(`${yellow}${clip(`  ${approvalKeys(first.rule, 'this session')}`)}${reset}`);
    }
    return lines;
  }
}

/** The one line a request or a decision gets in plain progress output (and the live display's log). */
export function approvalLine(event: RunEvent): string | undefined {
  const id = 'agentId' in event ? shortId(event.agentId) : '';
  if (event.type === 'approval') {
    const { request } = event;
    return `${'approval'.padEnd(10)} ${id} ${request.tool} ${excerpt(JSON.stringify(request.args), LINE_EXCERPT_CHARS)} waits: ${request.reason} [${request.requestId}]`;
  }
  if (event.type === 'decision') {
    return `${(event.decision.approved ? 'approved' : 'denied').padEnd(10)} ${id} ${event.tool} by ${deciderWords(event.decision)}${event.decision.reason ? `: ${excerpt(event.decision.reason, LINE_EXCERPT_CHARS)}` : ''}`;
  }
  return undefined;
}

function deciderWords(decision: ApprovalDecision): string {
  const who = decision.by === 'person' ? 'a person' : decision.by;
  return decision.decider === undefined ? who : `${who} (${decision.decider})`;
}

/**
 * The keys that answer a request of `rule`: no `[a]` when the rule cannot be remembered (it holds
 * a masked secret), and why.
 */
export function approvalKeys(rule: string, scope: string): string {
  return rememberable(rule)
    ? `[y] approve  [n] deny  [a] always allow \`${rule}\` ${scope}`
    : `[y] approve  [n] deny  (no [a]: ${NOT_REMEMBERABLE})`;
}
