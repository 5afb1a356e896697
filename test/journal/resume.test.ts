import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasErrorCode } from '../../src/errors.ts';
import { INTERRUPTED_TOOL_RESULT } from '../../src/journal/constants.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { resumeState } from '../../src/journal/resume.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import { AGENT_ID, FakeAgent, rerender, writeSampleRun } from './helpers.ts';

function interruptedRun(): MemoryJournal {
  const journal = new MemoryJournal();
  new FakeAgent(journal)
    .start()
    .submit(1)
    .call(1, 'c1', 'read_file', { path: 'README.md' })
    .result(1, 'c1', 'read_file', 'README v1', {
      stateUpdates: [{ key: 'file:README.md', text: 'README v1' }],
      displayed: ['file:README.md'],
    })
    .receipt(1, 4000, 50, 0.01)
    .submit(2)
    .call(2, 'c2', 'http_get', { url: 'https://example.com' })
    .result(2, 'c2', 'http_get', 'status 200')
    .call(2, 'c3', 'read_file', { path: 'CHANGELOG.md' });
  return journal;
}

describe('resumeState', () => {
  it('an ended agent: its terminal event, every finished call, and the usage of every turn', () => {
    const journal = new MemoryJournal();
    writeSampleRun(journal);
    const state = resumeState(journal.events);
    expect(state.ended).toMatchObject({ type: 'Completed', answer: 'The README says hello.' });
    expect(state.agentId).toBe(AGENT_ID);
    expect(state.started.task).toBe('Read the README and report.');
    expect(state.nextRound).toBe(4);
    expect(state.roundsUsed).toBe(3);
    expect([...state.finishedCalls.keys()]).toEqual(['c1', 'c2', 'c3']);
    expect(state.finishedCalls.get('c3')).toMatchObject({ text: 'README v2', ok: true });
    expect(state.pendingCalls).toEqual([]);
    expect(state.totals).toMatchObject({
      usage: { inputTokens: 12_300, outputTokens: 130, cachedInputTokens: 0, reasoningTokens: 0 },
      requests: 3,
      latencyMs: 30,
    });
    expect(state.totals.costUsd).toBeCloseTo(0.03, 10);
    expect(state.lastEvent).toBe(journal.events.at(-1));
  });

  it('a crash mid-round: the call without a result is pending, finished ones are not, next round is fresh', () => {
    const state = resumeState(interruptedRun().events);
    expect(state.ended).toBeUndefined();
    expect(state.nextRound).toBe(3);
    expect(state.roundsUsed).toBe(2);
    expect([...state.finishedCalls.keys()]).toEqual(['c1', 'c2']);
    expect(state.pendingCalls.map((call) => [call.callId, call.name, call.args])).toEqual([
      ['c3', 'read_file', { path: 'CHANGELOG.md' }],
    ]);
    expect(state.totals.usage.inputTokens).toBe(4000);
  });

  it('lists projection changes in journal order for replay', () => {
    const state = resumeState(interruptedRun().events);
    expect(
      state.projection.map((event) => {
        switch (event.type) {
          case 'StateChanged':
            return `state ${event.key}`;
          case 'ToolCall':
            return `call ${event.callId}`;
          case 'ToolResult':
            return `result ${event.callId}`;
          default:
            return event.text;
        }
      }),
    ).toEqual([
      'call c1',
      'Tool call: read_file {"path":"README.md"}',
      'result c1',
      'Tool result: README v1',
      'state file:README.md',
      'call c2',
      'Tool call: http_get {"url":"https://example.com"}',
      'result c2',
      'Tool result: status 200',
      'call c3',
      'Tool call: read_file {"path":"CHANGELOG.md"}',
    ]);
  });

  it('a crash right after a submission still uses up that round', () => {
    const journal = new MemoryJournal();
    new FakeAgent(journal).start().submit(1);
    expect(resumeState(journal.events)).toMatchObject({ nextRound: 2, roundsUsed: 1, pendingCalls: [] });
    const fresh = new MemoryJournal();
    new FakeAgent(fresh).start();
    expect(resumeState(fresh.events)).toMatchObject({ nextRound: 1, roundsUsed: 0, resumes: 0 });
  });

  it('a parked wait is reported apart from pending calls, with the instruction index it asked for', () => {
    const journal = new MemoryJournal();
    const agent = new FakeAgent(journal).start().submit(1);
    agent.append({ type: 'Instructed', agentId: AGENT_ID, index: 0, text: 'first' });
    agent.call(1, 'w1', 'wait_for_instruction', {});
    agent.append({ type: 'Waiting', agentId: AGENT_ID, callId: 'w1', index: 1 });
    expect(resumeState(journal.events)).toMatchObject({
      instructionsReceived: 1,
      waiting: { callId: 'w1', index: 1, instruction: undefined },
      pendingCalls: [],
    });

    agent.append({ type: 'Instructed', agentId: AGENT_ID, index: 1, text: 'second', callId: 'w1' });
    expect(resumeState(journal.events)).toMatchObject({
      instructionsReceived: 2,
      waiting: { callId: 'w1', index: 1, instruction: 'second' },
    });

    agent.result(1, 'w1', 'wait_for_instruction', 'second');
    const state = resumeState(journal.events);
    expect(state).toMatchObject({ instructionsReceived: 2, waiting: undefined, pendingCalls: [] });
    expect(state.finishedCalls.has('w1')).toBe(true);
  });

  it('counts earlier resumes and never goes back to a round a resume already announced', () => {
    const journal = interruptedRun();
    journal.append({
      type: 'Resumed',
      agentId: AGENT_ID,
      nextRound: 3,
      pendingCallIds: ['c3'],
      truncatedBytes: 0,
    });
    expect(resumeState(journal.events)).toMatchObject({ resumes: 1, nextRound: 3 });
    journal.append({
      type: 'Resumed',
      agentId: AGENT_ID,
      nextRound: 5,
      pendingCallIds: [],
      truncatedBytes: 0,
    });
    expect(resumeState(journal.events)).toMatchObject({ resumes: 2, nextRound: 5 });
  });

  it('rejects a journal that does not begin with Started', () => {
    for (const events of [[], interruptedRun().events.slice(1)]) {
      try {
        resumeState(events);
        expect.unreachable('must throw');
      } catch (error) {
        expect(hasErrorCode(error, 'journal_not_started')).toBe(true);
      }
    }
  });

  it('the documented procedure continues a torn journal to a verified completion without re-running a call', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-journal-'));
    try {
      const file = path.join(dir, 'agent.jsonl');
      const first = JournalWriter.open(file);
      for (const event of interruptedRun().events) {
        const { seq: _seq, prev: _prev, hash: _hash, ...body } = event;
        first.append(body);
      }
      first.close();
      appendFileSync(file, '{"type":"ToolResult","callId":"c3","te');

      const read = readJournal(file);
      expect(read.tornTail).toBe(true);
      const state = resumeState(read.events);
      expect(state.ended).toBeUndefined();

      const writer = JournalWriter.open(file);
      const agent = new FakeAgent(writer).adopt(read.events);
      agent.append({
        type: 'Resumed',
        agentId: state.agentId,
        nextRound: state.nextRound,
        pendingCallIds: state.pendingCalls.map((call) => call.callId),
        truncatedBytes: writer.truncatedBytes,
      });
      for (const call of state.pendingCalls)
        agent.result(call.round, call.callId, call.name, INTERRUPTED_TOOL_RESULT, { ok: false });
      agent
        .submit(state.nextRound)
        .receipt(state.nextRound, 4300, 10)
        .complete('done', state.roundsUsed + 1);
      writer.close();

      const final = readJournal(file);
      const executed = final.events
        .filter((event) => event.type === 'ToolResult')
        .map((event) => event.callId);
      expect(executed).toEqual(['c1', 'c2', 'c3']);
      expect(resumeState(final.events)).toMatchObject({
        ended: { type: 'Completed' },
        resumes: 1,
        pendingCalls: [],
      });
      expect(verifyJournalFile(file, { rerender })).toMatchObject({
        ok: true,
        tornTail: false,
        checkedInferences: 3,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
