/**
 * The session loop: one projection across user turns. Messages arrive on the agent's inbox
 * (channels.waitForInstruction), each turn ends with a text answer or complete_task and is
 * journalled as TurnAnswered; history, keyed state and budgets carry over.
 */
import { describe, expect, it } from 'vitest';
import type { AuditEvent, AuditEventInput } from '../../src/journal/events.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { TURN_CANCELLED_NOTE } from '../../src/loop/session.ts';
import type { AgentChannels } from '../../src/loop/types.ts';
import type { ScriptedResponse, ScriptedStep } from '../../src/providers/scripted.ts';
import { eventsOf, recordingTool, runScripted } from './helpers.ts';

/** An inbox the test fills: waits resolve when message `index` is there, null when aborted. */
class Inbox {
  readonly messages: string[] = [];
  readonly #waiters: { index: number; resolve: (text: string | null) => void }[] = [];
  /** Resolves when the session first waits for message `index`. */
  readonly asked = new Map<number, () => void>();
  readonly #asked = new Map<number, Promise<void>>();

  constructor(messages: readonly string[] = []) {
    this.messages.push(...messages);
  }

  send(text: string): void {
    this.messages.push(text);
    for (const waiter of this.#waiters.splice(0)) {
      const message = this.messages[waiter.index];
      if (message === undefined) this.#waiters.push(waiter);
      else waiter.resolve(message);
    }
  }

  waitingFor(index: number): Promise<void> {
    let promise = this.#asked.get(index);
    if (!promise) {
      promise = new Promise((resolve) => this.asked.set(index, resolve));
      this.#asked.set(index, promise);
    }
    return promise;
  }

  readonly channels: AgentChannels = {
    waitForInstruction: (index, _timeout, signal) => {
      void this.waitingFor(index);
      this.asked.get(index)?.();
      const ready = this.messages[index];
      if (ready !== undefined) return Promise.resolve(ready);
      return new Promise((resolve) => {
        this.#waiters.push({ index, resolve });
        signal.addEventListener('abort', () => resolve(null), { once: true });
      });
    },
  };
}

const say = (text: string): ScriptedResponse => ({ text, usage: { inputTokens: 10, outputTokens: 2 } });

function inputs(provider: { requests: readonly { input: string }[] }): string[] {
  return provider.requests.map((request) => request.input);
}

describe('a session', () => {
  it('answers each user message with one turn, keeping history, state and budget across turns', async () => {
    const inbox = new Inbox(['hi', 'read the note', 'and now?']);
    const note = recordingTool('note', () => ({
      ok: true,
      text: 'note v1',
      stateUpdates: [{ key: 'note', text: 'NOTE STATE' }],
      displayedStateKeys: [],
    }));
    const controller = new AbortController();
    const answers: AuditEventInput[] = [];
    const running = runScripted(
      [
        say('Hello!'),
        { toolCalls: [{ name: 'note', arguments: { value: 'x' } }] },
        { toolCalls: [{ name: 'complete_task', arguments: { result: { read: true } } }] },
        (request) => {
          expect(request.input).toContain('NOTE STATE');
          return say('Still here.');
        },
      ],
      {
        tools: [note.tool],
        run: {
          session: true,
          channels: inbox.channels,
          signal: controller.signal,
          task: 'Chat with the user.',
          onEvent: (event) => {
            if (event.type === 'TurnAnswered') answers.push(event);
          },
        },
      },
    );
    await inbox.waitingFor(3);
    controller.abort(new Error('session closed'));
    const { outcome, events, provider } = await running;

    expect(
      answers.map((event) => event.type === 'TurnAnswered' && [event.turn, event.answer, event.result]),
    ).toEqual([
      [0, 'Hello!', undefined],
      [1, '{"read":true}', { read: true }],
      [2, 'Still here.', undefined],
    ]);
    // Closed while it waited for the next message: it ends Completed with its last answer.
    expect(outcome).toMatchObject({ status: 'completed', answer: 'Still here.', steps: 4 });
    expect(eventsOf(events, 'Started')[0]).toMatchObject({ session: true, task: 'Chat with the user.' });
    const last = inputs(provider).at(-1) ?? '';
    for (const line of ['User: hi', 'Assistant: Hello!', 'User: read the note', 'User: and now?'])
      expect(last).toContain(line);
    expect(last.indexOf('User: hi')).toBeLessThan(last.indexOf('User: and now?'));
    expect(eventsOf(events, 'Instructed').map((event) => [event.index, event.text])).toEqual([
      [0, 'hi'],
      [1, 'read the note'],
      [2, 'and now?'],
    ]);
  });

  it('applies the completion requirement to each turn, and refuses wait_for_instruction', async () => {
    const inbox = new Inbox(['one', 'two']);
    const controller = new AbortController();
    const done = (n: number): ScriptedStep => ({
      toolCalls: [{ name: 'complete_task', arguments: { result: { n } } }],
    });
    const running = runScripted(
      [done(1), { toolCalls: [{ name: 'wait_for_instruction', arguments: {} }] }, done(2)],
      {
        definition: {
          completionRequirement: {
            tool: 'complete_task',
            reminder: 'Finish with complete_task.',
            recovery: { maxRetries: 2, baseDelayMs: 0, maxDelayMs: 0 },
          },
        },
        run: { session: true, channels: inbox.channels, signal: controller.signal },
      },
    );
    await inbox.waitingFor(2);
    controller.abort(new Error('closed'));
    const { outcome, events } = await running;
    expect(eventsOf(events, 'TurnAnswered').map((event) => event.result)).toEqual([{ n: 1 }, { n: 2 }]);
    const wait = eventsOf(events, 'ToolResult').find((result) => result.name === 'wait_for_instruction');
    expect(wait).toMatchObject({ ok: false });
    expect(wait?.text).toContain("the user's next message");
    expect(outcome).toMatchObject({ status: 'completed', result: { n: 2 } });
  });

  it('fails the session when a limit is reached, with the turns so far journalled', async () => {
    const inbox = new Inbox(['a', 'b']);
    const { outcome, events } = await runScripted([say('A'), say('B')], {
      run: { session: true, channels: inbox.channels, limits: { maxSteps: 1 } },
      allowUnused: true,
    });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'step_limit' });
    expect(eventsOf(events, 'TurnAnswered')).toHaveLength(1);
  });

  it('cancels one turn through turnSignal: the tool in flight is stopped, and the next message is answered', async () => {
    const inbox = new Inbox(['run the slow tool', 'never mind']);
    const turns: AbortController[] = [];
    const channels: AgentChannels = {
      ...inbox.channels,
      turnSignal: (turn) => {
        turns[turn] = new AbortController();
        return turns[turn]?.signal;
      },
    };
    // The tool never settles by itself: only the turn's cancel stops it.
    const slow = recordingTool('slow', () => {
      queueMicrotask(() => turns[0]?.abort(new Error('the user pressed Esc')));
      return new Promise(() => {});
    });
    const controller = new AbortController();
    const seen: AuditEventInput[] = [];
    const running = runScripted(
      [
        { toolCalls: [{ name: 'slow', arguments: {} }] },
        (request) => {
          expect(request.input).toContain('slow was cancelled');
          expect(request.input).toContain(TURN_CANCELLED_NOTE);
          expect(request.input.indexOf(TURN_CANCELLED_NOTE)).toBeLessThan(
            request.input.indexOf('User: never mind'),
          );
          return say('Fine.');
        },
      ],
      {
        tools: [slow.tool],
        run: {
          session: true,
          channels,
          signal: controller.signal,
          onEvent: (event) => seen.push(event),
        },
      },
    );
    await inbox.waitingFor(2);
    // The second turn's signal is its own: cancelling the first did not reach it.
    expect(turns[1]?.signal.aborted).toBe(false);
    controller.abort(new Error('closed'));
    const { outcome, events } = await running;

    expect(eventsOf(events, 'TurnCancelled')).toMatchObject([{ turn: 0, reason: 'the user pressed Esc' }]);
    expect(eventsOf(events, 'TurnAnswered').map((event) => [event.turn, event.answer])).toEqual([
      [1, 'Fine.'],
    ]);
    expect(eventsOf(events, 'ToolResult')).toMatchObject([{ name: 'slow', ok: false }]);
    expect(seen.map((event) => event.type)).toContain('TurnCancelled');
    // Closed while it waited: Completed with its last answer, the cancelled turn's budget counted.
    expect(outcome).toMatchObject({ status: 'completed', answer: 'Fine.', steps: 2 });
  });

  it("ends Failed(cancelled) when the agent's own signal aborts during a turn, turnSignal or not", async () => {
    const inbox = new Inbox(['run the slow tool']);
    const controller = new AbortController();
    const slow = recordingTool('slow', () => {
      queueMicrotask(() => controller.abort(new Error('closing')));
      return new Promise(() => {});
    });
    const { outcome, events } = await runScripted([{ toolCalls: [{ name: 'slow', arguments: {} }] }], {
      tools: [slow.tool],
      run: {
        session: true,
        channels: { ...inbox.channels, turnSignal: () => new AbortController().signal },
        signal: controller.signal,
      },
    });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
    expect(eventsOf(events, 'TurnCancelled')).toEqual([]);
  });

  it('needs an inbox', async () => {
    const { outcome } = await runScripted([], { run: { session: true } });
    expect(outcome).toMatchObject({ status: 'failed', error: { code: 'session_without_channel' } });
  });

  describe('resumed from its journal', () => {
    async function record(): Promise<readonly AuditEvent[]> {
      const inbox = new Inbox(['first', 'second']);
      const controller = new AbortController();
      const running = runScripted([say('One.'), say('Two.')], {
        run: { session: true, channels: inbox.channels, signal: controller.signal },
      });
      await inbox.waitingFor(2);
      controller.abort(new Error('closed'));
      return (await running).events;
    }

    it('after an answer: repeats that answer to the caller, waits for the next message, and keeps the history', async () => {
      const full = await record();
      const cut = full.findIndex((event) => event.type === 'TurnAnswered' && event.turn === 0);
      const prefix = full.slice(0, cut + 1);
      const journal = new MemoryJournal({ events: prefix });
      const inbox = new Inbox(['first', 'second']);
      const controller = new AbortController();
      const seen: AuditEventInput[] = [];
      const running = runScripted(
        [
          (request) => {
            expect(request.input).toContain('User: first\n\nAssistant: One.\n\nUser: second');
            return say('Two again.');
          },
        ],
        {
          run: {
            session: true,
            channels: inbox.channels,
            signal: controller.signal,
            resumeFrom: prefix,
            journal,
            onEvent: (event) => seen.push(event),
          },
        },
      );
      await inbox.waitingFor(2);
      controller.abort(new Error('closed'));
      const { outcome } = await running;
      expect(
        seen
          .filter((event) => event.type === 'TurnAnswered')
          .map((event) => event.type === 'TurnAnswered' && event.turn),
      ).toEqual([0, 1]);
      // The repeated answer went to the caller only: the journal holds each turn's answer once.
      expect(eventsOf(journal.events, 'TurnAnswered').map((event) => event.turn)).toEqual([0, 1]);
      expect(outcome).toMatchObject({ status: 'completed', answer: 'Two again.' });
    });

    it('after a cancelled turn: repeats the cancel to the caller and waits for the next message', async () => {
      const inbox = new Inbox(['first']);
      const controller = new AbortController();
      const cancel = new AbortController();
      const slow = recordingTool('slow', () => {
        queueMicrotask(() => cancel.abort(new Error('stop')));
        return new Promise(() => {});
      });
      const recorded = runScripted([{ toolCalls: [{ name: 'slow', arguments: {} }] }], {
        tools: [slow.tool],
        run: {
          session: true,
          channels: { ...inbox.channels, turnSignal: (turn) => (turn === 0 ? cancel.signal : undefined) },
          signal: controller.signal,
        },
      });
      await inbox.waitingFor(1);
      controller.abort(new Error('closed'));
      const full = (await recorded).events;
      const prefix = full.slice(0, full.findIndex((event) => event.type === 'TurnCancelled') + 1);

      const journal = new MemoryJournal({ events: prefix });
      const resumedInbox = new Inbox(['first', 'second']);
      const resumed = new AbortController();
      const seen: AuditEventInput[] = [];
      const running = runScripted(
        [
          (request) => {
            expect(request.input).toContain(`${TURN_CANCELLED_NOTE}\n\nUser: second`);
            return say('Two.');
          },
        ],
        {
          tools: [slow.tool],
          run: {
            session: true,
            channels: resumedInbox.channels,
            signal: resumed.signal,
            resumeFrom: prefix,
            journal,
            onEvent: (event) => seen.push(event),
          },
        },
      );
      await resumedInbox.waitingFor(2);
      resumed.abort(new Error('closed'));
      await running;
      expect(seen.filter((event) => event.type.startsWith('Turn')).map((event) => event.type)).toEqual([
        'TurnCancelled',
        'TurnAnswered',
      ]);
      expect(eventsOf(journal.events, 'TurnCancelled')).toHaveLength(1);
      expect(eventsOf(journal.events, 'TurnAnswered').map((event) => event.turn)).toEqual([1]);
    });

    it('in the middle of a turn: the message it had received is answered, not asked for again', async () => {
      const full = await record();
      // Cut right after the second message was received, before the model answered it.
      const cut = full.findIndex((event) => event.type === 'Instructed' && event.index === 1);
      const prefix = full.slice(0, cut + 1);
      const journal = new MemoryJournal({ events: prefix });
      const inbox = new Inbox(['first', 'second']);
      const controller = new AbortController();
      const running = runScripted(
        [
          (request) => {
            expect(request.input).toContain('User: second');
            return say('Two.');
          },
        ],
        {
          run: {
            session: true,
            channels: inbox.channels,
            signal: controller.signal,
            resumeFrom: prefix,
            journal,
          },
        },
      );
      await inbox.waitingFor(2);
      controller.abort(new Error('closed'));
      await running;
      const users = eventsOf(journal.events, 'HistoryAppended').filter((event) => event.kind === 'user');
      expect(users.map((event) => event.text)).toEqual(['User: first', 'User: second']);
      expect(eventsOf(journal.events, 'TurnAnswered').map((event) => [event.turn, event.answer])).toEqual([
        [0, 'One.'],
        [1, 'Two.'],
      ]);
    });
  });
});
