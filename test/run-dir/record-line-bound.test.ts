import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { toolCallsOf } from '../../src/compare/tool-calls.ts';
import { isTroupeError } from '../../src/errors.ts';
import { approvalsFile, readApprovalRecords, readApprovals } from '../../src/run-dir/approvals.ts';
import { readRunLog } from '../../src/run-dir/run-log.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'troupe-record-lines-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const approval = (agentId: string, reason: string): string =>
  JSON.stringify({
    agentId,
    agent: 'reviewer',
    index: 0,
    callId: 'c1',
    tool: 'Bash',
    rule: 'ask',
    approved: false,
    by: 'rule',
    reason,
    decidedAt: '2026-12-07T00:00:00.000Z',
  });

describe('approvals.jsonl is read a line at a time, each line bounded', () => {
  it('skips and counts a line over the bound, keeps the records around it and a torn last line out', () => {
    const root = path.join(dir, 'approvals');
    mkdirSync(root, { recursive: true });
    writeFileSync(
      approvalsFile(root),
      `${approval('a1', 'short')}\n${approval('a2', 'x'.repeat(600))}\n${approval('a3', 'short')}\n{"agentId":"a4`,
    );
    const read = readApprovalRecords(root, 400);
    expect(read.records.map((record) => record.agentId)).toEqual(['a1', 'a3']);
    expect(read.tooLong).toBe(1);
    expect(read.unreadable).toBe(1);
    expect(readApprovals(root).map((record) => record.agentId)).toEqual(['a1', 'a2', 'a3']);
  });

  it('has no records when there is no file', () => {
    expect(readApprovalRecords(path.join(dir, 'none'))).toEqual({ records: [], tooLong: 0, unreadable: 0 });
  });
});

describe('events.jsonl is read a line at a time, each line bounded', () => {
  it('skips and counts a line over the bound and a damaged one, and leaves a torn last line out', () => {
    const file = path.join(dir, 'events.jsonl');
    const event = (type: string, pad = ''): string =>
      JSON.stringify({ ts: '2026-12-07T00:00:00.000Z', type: 'budget', code: type, message: pad });
    writeFileSync(
      file,
      `${event('one')}\n${event('long', 'y'.repeat(600))}\nnot json\n${event('two')}\n${event('torn')}`,
    );
    const skipped = { count: 0 };
    const events = readRunLog(file, 400, skipped);
    expect(events.map((e) => (e.type === 'budget' ? e.code : e.type))).toEqual(['one', 'two']);
    expect(skipped.count).toBe(2);
    expect(readRunLog(file).map((e) => (e.type === 'budget' ? e.code : e.type))).toEqual([
      'one',
      'long',
      'two',
    ]);
    expect(readRunLog(path.join(dir, 'no-events.jsonl'))).toEqual([]);
  });
});

describe('a journal read for its tool calls', () => {
  const call = (id: string, args: Record<string, unknown>): string =>
    JSON.stringify({ type: 'ToolCall', id, name: 'read_file', args });

  it('counts the calls of a journal read a line at a time', () => {
    const file = path.join(dir, 'calls.jsonl');
    writeFileSync(
      file,
      `${call('1', { path: 'a.md' })}\n{"type":"Other"}\n${call('2', { path: 'a.md' })}\n{"type":"ToolC`,
    );
    const calls = toolCallsOf(file);
    expect([...(calls?.values() ?? [])]).toEqual([{ name: 'read_file', args: '{"path":"a.md"}', count: 2 }]);
  });

  it('fails a line over the bound with journal_line_too_long naming the file and the line, not reading it', () => {
    const file = path.join(dir, 'long-call.jsonl');
    writeFileSync(file, `${call('1', { path: 'a.md' })}\n${call('2', { text: 'z'.repeat(2000) })}\n`);
    let caught: unknown;
    try {
      toolCallsOf(file, 1000);
    } catch (error) {
      caught = error;
    }
    expect(isTroupeError(caught) && caught.code).toBe('journal_line_too_long');
    expect(isTroupeError(caught) && caught.fields).toMatchObject({ path: file, line: 2, limit: 1000 });
    expect(toolCallsOf(file)?.size).toBe(2);
  });
});
