/**
 * Supervisor.session on real worker threads: each send is a user message answered by one turn of
 * the same projection; the session survives its thread dying and is journalled like any agent.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AuditEvent, EventOf } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { verifyJournalContents } from '../../src/journal/verify.ts';
import type { AgentTurn } from '../../src/supervisor/events.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { fixtures, tempDir } from './helpers.ts';

const chatter = makeDefinition({ name: 'chatter', body: 'You chat.', tools: ['note', 'crash_exit', 'hold'] });

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

function sessionSupervisor(cwd: string): Supervisor {
  return new Supervisor({
    threads: 1,
    providers: { session: { kind: 'module', module: path.join(fixtures, 'session-provider.ts') } },
    defaultProvider: 'session',
    toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
    definitions: [chatter],
    journalDir: path.join(cwd, 'journals'),
    cwd,
    compat: false,
    heartbeat: { intervalMs: 250, timeoutMs: 6000 },
    restart: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 50 },
  });
}

function ofType<T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T): EventOf<T>[] {
  return events.filter((event): event is EventOf<T> => event.type === type);
}

describe('Supervisor.session', () => {
  it('answers each message with one turn of the same projection, and ends Completed on close', async () => {
    const cwd = tempDir('troupe-session-');
    supervisor = sessionSupervisor(cwd);
    const chat = supervisor.session('chatter');
    expect(await chat.send('hello')).toEqual({ turn: 0, answer: 'turn 1: hello (earlier: )' });
    expect(await chat.send('call note')).toEqual({ turn: 1, answer: 'note done' });
    // Sent together: queued, and answered in order.
    const [third, fourth] = await Promise.all([chat.send('third'), chat.send('fourth')]);
    expect(third.answer).toBe('turn 3: third (earlier: hello | call note)');
    expect(fourth).toEqual({ turn: 3, answer: 'turn 4: fourth (earlier: hello | call note | third)' });

    const outcome = await chat.close();
    expect(outcome).toMatchObject({ status: 'completed', answer: fourth.answer });
    await expect(chat.send('too late')).rejects.toMatchObject({ code: 'session_ended' });
    const events = readJournal(path.join(cwd, 'journals', `${chat.id}.jsonl`)).events;
    expect(ofType(events, 'Started')[0]).toMatchObject({ session: true });
    expect(ofType(events, 'TurnAnswered').map((event) => event.turn)).toEqual([0, 1, 2, 3]);
  });

  it('keeps answering across a thread restart: the turn the thread died in is answered, history kept', async () => {
    const cwd = tempDir('troupe-session-');
    supervisor = sessionSupervisor(cwd);
    const restarted: string[] = [];
    supervisor.on('agent:restarted', (event) => restarted.push(event.agentId));
    const chat = supervisor.session('chatter', { id: 'chat-restart' });
    const turns: AgentTurn[] = [];
    chat.handle.on('turn', (event) => turns.push(event));

    expect((await chat.send('before')).answer).toBe('turn 1: before (earlier: )');
    // crash_exit ends the thread the first time it runs; the session resumes from its journal.
    expect(await chat.send('call crash_exit')).toEqual({ turn: 1, answer: 'crash_exit done' });
    expect(restarted).toEqual(['chat-restart']);
    expect((await chat.send('after')).answer).toBe('turn 3: after (earlier: before | call crash_exit)');
    expect((await chat.close()).status).toBe('completed');

    const log = readFileSync(path.join(cwd, '.faults', 'executions.log'), 'utf8')
      .trim()
      .split('\n');
    expect(log).toEqual(['chat-restart crash_exit']);
    const events = readJournal(path.join(cwd, 'journals', 'chat-restart.jsonl')).events;
    expect(ofType(events, 'Resumed')).toHaveLength(1);
    expect(ofType(events, 'TurnAnswered').map((event) => event.turn)).toEqual([0, 1, 2]);
    // Every message was received once, whatever the restart re-delivered.
    expect(ofType(events, 'Instructed').map((event) => event.text)).toEqual([
      'before',
      'call crash_exit',
      'after',
    ]);
    expect(turns.map((event) => event.turn)).toEqual([0, 1, 2]);
    // A thread is started twice (the second after the crash): slow on a loaded machine.
  });

  it('continues a session whose process died, from its journal, with resume: true', async () => {
    const before = tempDir('troupe-session-');
    supervisor = sessionSupervisor(before);
    const first = supervisor.session('chatter', { id: 'chat-cut' });
    await first.send('one');
    await first.send('two');
    await first.close();
    await supervisor.close();
    // What a process killed after the first answer leaves: the journal up to that answer.
    const lines = readFileSync(path.join(before, 'journals', 'chat-cut.jsonl'), 'utf8').split('\n');
    const cut = lines.findIndex((line) => line.includes('"type":"TurnAnswered"'));
    const cwd = tempDir('troupe-session-');
    mkdirSync(path.join(cwd, 'journals'));
    writeFileSync(path.join(cwd, 'journals', 'chat-cut.jsonl'), `${lines.slice(0, cut + 1).join('\n')}\n`);

    supervisor = sessionSupervisor(cwd);
    const again = supervisor.session('chatter', { id: 'chat-cut', resume: true });
    expect(await again.send('two again')).toEqual({ turn: 1, answer: 'turn 2: two again (earlier: one)' });
    expect((await again.close()).status).toBe('completed');
    const events = readJournal(path.join(cwd, 'journals', 'chat-cut.jsonl')).events;
    expect(ofType(events, 'Instructed').map((event) => event.text)).toEqual(['one', 'two again']);
    expect(verifyJournalContents(readJournal(path.join(cwd, 'journals', 'chat-cut.jsonl'))).ok).toBe(true);
  });

  it('cancels the turn in flight alone: its send rejects, and the session answers the next message', async () => {
    const cwd = tempDir('troupe-session-');
    supervisor = sessionSupervisor(cwd);
    const chat = supervisor.session('chatter');
    const turns: AgentTurn[] = [];
    chat.handle.on('turn', (event) => turns.push(event));
    // `hold` waits until its call is cancelled: only the turn's cancel ends it.
    chat.handle.on('tool', (event) => {
      if (event.phase === 'started') void chat.cancelTurn('the user changed their mind');
    });
    await expect(chat.send('call hold')).rejects.toMatchObject({
      code: 'turn_cancelled',
      fields: { turn: 0, reason: 'the user changed their mind' },
    });
    expect(await chat.send('after')).toEqual({ turn: 1, answer: 'turn 2: after (earlier: call hold)' });
    // Nothing in flight: nothing to cancel.
    await chat.cancelTurn();
    expect((await chat.close()).status).toBe('completed');
    expect(turns.map((event) => [event.turn, event.cancelled])).toEqual([
      [0, 'the user changed their mind'],
      [1, undefined],
    ]);
    const journal = readJournal(path.join(cwd, 'journals', `${chat.id}.jsonl`));
    expect(ofType(journal.events, 'TurnCancelled')).toMatchObject([{ turn: 0 }]);
    expect(ofType(journal.events, 'ToolResult')).toMatchObject([{ name: 'hold', ok: false }]);
    expect(verifyJournalContents(journal).ok).toBe(true);
  });

  it('cancels turn after turn, each the oldest not yet answered, while later messages wait', async () => {
    const cwd = tempDir('troupe-session-');
    supervisor = sessionSupervisor(cwd);
    const chat = supervisor.session('chatter');
    const first = chat.send('call hold');
    const second = chat.send('call hold');
    const third = chat.send('third');
    let started = 0;
    chat.handle.on('tool', (event) => {
      if (event.phase !== 'started') return;
      started += 1;
      if (started === 1) void chat.cancelTurn('first');
    });
    await expect(first).rejects.toMatchObject({
      code: 'turn_cancelled',
      fields: { turn: 0, reason: 'first' },
    });
    // The second hold's turn runs (or is about to start) now: cancelled either way.
    await chat.cancelTurn('second');
    await expect(second).rejects.toMatchObject({
      code: 'turn_cancelled',
      fields: { turn: 1, reason: 'second' },
    });
    expect(await third).toEqual({ turn: 2, answer: 'turn 3: third (earlier: call hold | call hold)' });
    await chat.close();
  });

  it('rejects a pending send when the session fails, with the reason', async () => {
    const cwd = tempDir('troupe-session-');
    supervisor = sessionSupervisor(cwd);
    const chat = supervisor.session('chatter', { limits: { maxSteps: 1 } });
    await chat.send('one');
    await expect(chat.send('two')).rejects.toMatchObject({
      code: 'session_ended',
      fields: { status: 'failed', reason: 'step_limit' },
    });
  });
});
