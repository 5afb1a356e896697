/**
 * A session's turn cancel that its thread dies with: the engine keeps it until the agent reports
 * the turn's end, and gives it to the agent restarted from its journal.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AuditEvent, EventOf } from '../../../src/journal/events.ts';
import { readJournal } from '../../../src/journal/reader.ts';
import type { AgentTurn } from '../../../src/supervisor/events.ts';
import { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { makeDefinition } from '../../prompt/make-definition.ts';
import { fixtures, tempDir } from '../../supervisor/helpers.ts';

const chatter = makeDefinition({ name: 'chatter', body: 'You chat.', tools: ['exit_on_cancel'] });

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

function ofType<T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T): EventOf<T>[] {
  return events.filter((event): event is EventOf<T> => event.type === type);
}

describe('a turn cancel sent to a thread that then dies', () => {
  it('cancels the turn on the restarted session, as it would have without the death', async () => {
    const cwd = tempDir('troupe-turn-cancel-');
    supervisor = new Supervisor({
      threads: 1,
      providers: { session: { kind: 'module', module: path.join(fixtures, 'session-provider.ts') } },
      defaultProvider: 'session',
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      definitions: [chatter],
      journalDir: path.join(cwd, 'journals'),
      cwd,
      compat: false,
      restart: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 50 },
    });
    const restarted: string[] = [];
    supervisor.on('agent:restarted', (event) => restarted.push(event.agentId));
    const chat = supervisor.session('chatter', { id: 'chat-cancel-crash' });
    const turns: AgentTurn[] = [];
    chat.handle.on('turn', (event) => turns.push(event));
    // exit_on_cancel ends its thread when its call is cancelled: the turn cancel reaches the
    // thread, and the thread dies before the turn can end.
    chat.handle.on('tool', (event) => {
      if (event.phase === 'started') void chat.cancelTurn('the user changed their mind');
    });

    await expect(chat.send('call exit_on_cancel')).rejects.toMatchObject({
      code: 'turn_cancelled',
      fields: { turn: 0, reason: 'the user changed their mind' },
    });
    expect(restarted).toEqual(['chat-cancel-crash']);
    expect(await chat.send('after')).toEqual({
      turn: 1,
      answer: 'turn 2: after (earlier: call exit_on_cancel)',
    });
    expect((await chat.close()).status).toBe('completed');

    expect(turns.map((event) => [event.turn, event.cancelled])).toEqual([
      [0, 'the user changed their mind'],
      [1, undefined],
    ]);
    const events = readJournal(path.join(cwd, 'journals', 'chat-cancel-crash.jsonl')).events;
    expect(ofType(events, 'Resumed')).toHaveLength(1);
    expect(ofType(events, 'TurnCancelled')).toMatchObject([
      { turn: 0, reason: 'the user changed their mind' },
    ]);
    // The cancelled turn did not run its tool again after the restart.
    const log = readFileSync(path.join(cwd, '.faults', 'executions.log'), 'utf8')
      .trim()
      .split('\n');
    expect(log).toEqual(['chat-cancel-crash exit_on_cancel']);
  });
});
