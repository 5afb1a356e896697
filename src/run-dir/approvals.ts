/**
 * Approvals in a run directory: `approvals.jsonl`, one line per decision on an agent's tool call
 * (asked or denied without asking), with what was asked, who or what decided and when, appended as
 * decisions happen (one synchronous write each, redacted like every run-directory file). The
 * closing summary lists every denied call from it; `troupe report` shows them per agent.
 */
import { appendFileSync, closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { redactValue } from '../journal/redact.ts';
import type { ApprovalDecision, ApprovalRequest } from '../protocol/approvals.ts';
import { LINE_EXCERPT_CHARS, MAX_RECORD_LINE_BYTES } from './constants.ts';
import { excerpt, shortId, table } from './format.ts';
import { fileLines } from './task-rows.ts';
import { fitWidth } from './text-width.ts';

/** One decision, as `approvals.jsonl` records it. */
export interface ApprovalRecord {
  readonly agentId: string;
  /** Definition name. */
  readonly agent: string;
  /** Plan position; null for agents spawned by other agents. */
  readonly index: number | null;
  /** Absent for a call denied without asking (a `deny` rule, `dontAsk`). */
  readonly requestId?: string;
  readonly callId: string;
  readonly tool: string;
  /** The arguments as the model gave them, when the call was asked about. */
  readonly args?: Readonly<Record<string, unknown>>;
  /** The rule that asked, or that denied. */
  readonly rule: string;
  /** Why it asked. */
  readonly asked?: string;
  readonly requestedAt?: string;
  readonly approved: boolean;
  /** `person`, `rule`, `timeout`, `unattended` or `policy`. */
  readonly by: ApprovalDecision['by'];
  /** Who exactly (`tty`, an `--approve` rule, `troupe approve (host:pid)`). */
  readonly decider?: string;
  readonly reason?: string;
  readonly remember?: 'call' | 'session';
  /** ISO 8601 time the decision was heard of. */
  readonly decidedAt: string;
}

/** `approvals.jsonl` of the run directory `root`. */
export function approvalsFile(root: string): string {
  return join(root, 'approvals.jsonl');
}

/** Appends one record (one synchronous write, redacted). */
export function appendApproval(root: string, record: ApprovalRecord): void {
  appendFileSync(approvalsFile(root), `${JSON.stringify(redactValue(record))}\n`);
}

/** What {@link readApprovalRecords} found. */
export interface ApprovalsRead {
  readonly records: ApprovalRecord[];
  /** Lines longer than the bound: skipped unread. */
  readonly tooLong: number;
  /** Other lines that are not a record (a torn last line, damage). */
  readonly unreadable: number;
}

/**
 * The records of a run directory, in order, read a chunk at a time (the file is never held whole,
 * only the line being read); a line over `maxLineBytes` is skipped unread and a torn or unreadable
 * line left out, each counted.
 */
export function readApprovalRecords(
  root: string,
  maxLineBytes: number = MAX_RECORD_LINE_BYTES,
): ApprovalsRead {
  const records: ApprovalRecord[] = [];
  let tooLong = 0;
  let unreadable = 0;
  let fd: number;
  try {
    fd = openSync(approvalsFile(root), 'r');
  } catch {
    return { records, tooLong, unreadable };
  }
  try {
    for (const line of fileLines(fd, maxLineBytes)) {
      if (line.tooLong) {
        tooLong += 1;
        continue;
      }
      if (line.text.trim() === '') continue;
      try {
        const value = JSON.parse(line.text) as Partial<ApprovalRecord>;
        if (typeof value.agentId === 'string' && typeof value.approved === 'boolean')
          records.push(value as ApprovalRecord);
        else unreadable += 1;
      } catch {
        // A torn last line: the process died while writing it.
        unreadable += 1;
      }
    }
  } finally {
    closeSync(fd);
  }
  return { records, tooLong, unreadable };
}

/** The records of a run directory, in order; a torn, unreadable or too long line is left out. */
export function readApprovals(root: string, maxLineBytes: number = MAX_RECORD_LINE_BYTES): ApprovalRecord[] {
  return readApprovalRecords(root, maxLineBytes).records;
}

/** `agent tool {"command":"npm test"}: reason`, for a line of a terminal. */
export function describeRequest(
  request: Pick<ApprovalRequest, 'agentId' | 'tool' | 'args' | 'reason'>,
): string {
  return `${shortId(request.agentId)} ${request.tool} ${excerpt(JSON.stringify(request.args), LINE_EXCERPT_CHARS)} (${request.reason})`;
}

/** Who decided, in words: `a person (tty)`, `timeout`, `rule --approve Bash(npm test:*)`. */
export function deciderText(record: Pick<ApprovalRecord, 'by' | 'decider'>): string {
  const who = record.by === 'person' ? 'a person' : record.by;
  return record.decider === undefined ? who : `${who} (${record.decider})`;
}

/** One line per denied call, for the closing summary. */
export function deniedLines(records: readonly ApprovalRecord[]): string[] {
  return records
    .filter((record) => !record.approved)
    .map(
      (record) =>
        `  ${shortId(record.agentId)} ${record.agent}: ${record.tool}${record.args ? ` ${excerpt(JSON.stringify(record.args), LINE_EXCERPT_CHARS)}` : ''} denied by ${deciderText(record)}${record.reason ? `: ${excerpt(record.reason, LINE_EXCERPT_CHARS)}` : ''}`,
    );
}

/** Counts of a run's decisions. */
export function approvalCounts(records: readonly ApprovalRecord[]): { approved: number; denied: number } {
  const approved = records.filter((record) => record.approved).length;
  return { approved, denied: records.length - approved };
}

/** The `troupe report` section: every decision, grouped by agent. Empty when there were none. */
export function approvalsReportText(records: readonly ApprovalRecord[], width: number): string[] {
  if (records.length === 0) return [];
  const { approved, denied } = approvalCounts(records);
  const rows = [
    ['AGENT ID', 'DEFINITION', 'TOOL', 'DECISION', 'BY', 'WHEN', 'CALL / REASON'],
    ...[...records]
      .sort((a, b) => a.agentId.localeCompare(b.agentId) || a.decidedAt.localeCompare(b.decidedAt))
      .map((record) => [
        shortId(record.agentId),
        record.agent,
        record.tool,
        record.approved ? 'approved' : 'denied',
        deciderText(record),
        record.decidedAt.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
        excerpt(
          [record.args ? JSON.stringify(record.args) : '', record.reason ?? record.asked ?? '']
            .filter((part) => part !== '')
            .join(' — '),
          LINE_EXCERPT_CHARS,
        ),
      ]),
  ];
  const fitted = table(rows).map((line) => fitWidth(line, width));
  return [`approvals: ${approved} approved, ${denied} denied`, ...fitted, ''];
}
