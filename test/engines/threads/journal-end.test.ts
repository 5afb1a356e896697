/**
 * journalEnd: the terminal event the thread engine writes for an agent it ends itself (restart cap,
 * no thread left, a quarantine thread that did not start or came too late, a cancel while queued).
 * The paths that reach it are tested end to end in faults, start-timeout, quarantine-wait and
 * turn-cancel-restart tests; this file covers the journal states a thread death can leave.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { journalEnd, journalOutcome } from '../../../src/engines/threads/journal-end.ts';
import { SystemError } from '../../../src/errors.ts';
import { isTerminal } from '../../../src/journal/events.ts';
import { readJournal } from '../../../src/journal/reader.ts';
import { JournalWriter } from '../../../src/journal/writer.ts';
import { completedOutcome, failedOutcome, terminalEvent } from '../../../src/loop/outcome.ts';
import { AGENT_ID, FakeAgent } from '../../journal/helpers.ts';
import { tempDir } from '../../supervisor/helpers.ts';

const crashed = new SystemError('thread_crashed', 'Its thread crashed', { agentId: AGENT_ID }).toJSON();

/** A journal cut off by its thread's death: one answered round, a tool call running. */
function unfinishedJournal(): string {
  const file = path.join(tempDir(), `${AGENT_ID}.jsonl`);
  const journal = JournalWriter.open(file);
  new FakeAgent(journal)
    .start()
    .submit(1)
    .receipt(1, 4000, 50, 0.01)
    .call(1, 'c1', 'read_file', { path: 'README.md' });
  journal.close();
  return file;
}

describe('journalEnd', () => {
  it('appends one Failed event with the error and what the journal says the agent spent', () => {
    const file = unfinishedJournal();
    const outcome = journalEnd(file, AGENT_ID, 'crashed', crashed, 'always');
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'crashed',
      error: { code: 'thread_crashed', fields: { agentId: AGENT_ID } },
      usage: { inputTokens: 4000, outputTokens: 50 },
      costUsd: 0.01,
      rounds: 1,
      steps: 1,
    });
    const events = readJournal(file).events;
    expect(events.filter(isTerminal)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({
      type: 'Failed',
      reason: 'crashed',
      error: { code: 'thread_crashed' },
      usage: { inputTokens: 4000, outputTokens: 50 },
      rounds: 1,
    });
  });

  it('writes nothing to a journal that already ends, and returns the outcome it recorded', () => {
    const file = unfinishedJournal();
    const journal = JournalWriter.open(file);
    journal.append(
      terminalEvent(
        failedOutcome(AGENT_ID, 'budget', new SystemError('context_budget', 'Too big', {}).toJSON()),
      ),
    );
    journal.close();
    const before = readFileSync(file);
    const outcome = journalEnd(file, AGENT_ID, 'crashed', crashed, 'always');
    expect(outcome).toMatchObject({ status: 'failed', reason: 'budget', error: { code: 'context_budget' } });
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('a torn last line (the thread died writing its terminal event) is cut: one Failed event ends the journal', () => {
    const file = unfinishedJournal();
    // The thread's Failed line, cut short before its newline.
    appendFileSync(file, '{"type":"Failed","agentId":"agent-1","reason":"tool_error","err');
    expect(readJournal(file).tornTail).toBe(true);
    const outcome = journalEnd(file, AGENT_ID, 'crashed', crashed, 'never');
    expect(outcome).toMatchObject({ reason: 'crashed', error: { code: 'thread_crashed' } });
    const contents = readJournal(file);
    expect(contents.tornTail).toBe(false);
    expect(contents.problems).toEqual([]);
    expect(contents.events.filter(isTerminal)).toHaveLength(1);
    expect(contents.events.at(-1)).toMatchObject({ type: 'Failed', error: { code: 'thread_crashed' } });
  });

  it('creates no journal for an agent that never ran', () => {
    const file = path.join(tempDir(), 'never-ran.jsonl');
    const outcome = journalEnd(file, 'never-ran', 'cancelled', crashed, 'always');
    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled', rounds: 0 });
    expect(existsSync(file)).toBe(false);
  });

  it('leaves an empty journal empty (a thread that died before its agent started): no Failed without Started', () => {
    const file = path.join(tempDir(), 'empty.jsonl');
    writeFileSync(file, '');
    const outcome = journalEnd(file, 'empty', 'crashed', crashed, 'always');
    expect(outcome).toMatchObject({ status: 'failed', reason: 'crashed', rounds: 0 });
    expect(readFileSync(file, 'utf8')).toBe('');
  });

  it('journalOutcome: the Completed event of a result the supervisor delivered, with what the journal says was spent', () => {
    const file = unfinishedJournal();
    const outcome = journalOutcome(file, completedOutcome(AGENT_ID, { ok: 1 }), 'always');
    expect(outcome).toMatchObject({ status: 'completed', result: { ok: 1 }, answer: '{"ok":1}', rounds: 1 });
    const events = readJournal(file).events;
    expect(events.filter(isTerminal)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({
      type: 'Completed',
      result: { ok: 1 },
      usage: { inputTokens: 4000, outputTokens: 50 },
      costUsd: 0.01,
    });
    // Once: a second end (another path, the same death) finds it and writes nothing.
    const before = readFileSync(file);
    journalOutcome(file, completedOutcome(AGENT_ID, { ok: 1 }), 'always');
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('journalOutcome without write (a thread that may still write): what the journal says so far, nothing appended', () => {
    const file = unfinishedJournal();
    const before = readFileSync(file);
    const outcome = journalOutcome(file, completedOutcome(AGENT_ID, { ok: 1 }), 'always', false);
    expect(outcome).toMatchObject({
      status: 'completed',
      result: { ok: 1 },
      usage: { inputTokens: 4000, outputTokens: 50 },
      costUsd: 0.01,
      rounds: 1,
      steps: 1,
    });
    expect(readFileSync(file).equals(before)).toBe(true);
  });
});
