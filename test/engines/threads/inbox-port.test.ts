import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InboxServer } from '../../../src/engines/threads/inbox-server.ts';
import { Mailbox } from '../../../src/engines/threads/mailbox.ts';
import {
  type AdmissionEndpoint,
  INBOX_NO_TIMEOUT,
  type InboxRequestMessage,
  type InstructionDeliveryMessage,
} from '../../../src/protocol/messages.ts';
import { InboxClient } from '../../../workers/inbox-client.ts';

/** One event-loop turn: the client's setImmediate flush runs. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const fresh = (): AbortSignal => new AbortController().signal;

/**
 * A host's inbox port pair whose messages wait until the test delivers them, cloned as a
 * MessagePort would clone them. `mailboxes` stand for the supervisor's running agents.
 */
function link(mailboxes: Map<string, Mailbox>) {
  const up: InboxRequestMessage[] = [];
  const down: InstructionDeliveryMessage[] = [];
  let toServer: (message: InboxRequestMessage) => void = () => {};
  let toClient: (message: InstructionDeliveryMessage) => void = () => {};
  const hostEnd: AdmissionEndpoint<InstructionDeliveryMessage, InboxRequestMessage> = {
    postMessage: (message) => up.push(structuredClone(message)),
    on: (_event, listener) => {
      toClient = listener;
    },
  };
  const mainEnd: AdmissionEndpoint<InboxRequestMessage, InstructionDeliveryMessage> = {
    postMessage: (message) => down.push(structuredClone(message)),
    on: (_event, listener) => {
      toServer = listener;
    },
  };
  const client = new InboxClient(hostEnd);
  const server = new InboxServer(mainEnd, (agentId) => mailboxes.get(agentId));
  return {
    client,
    server,
    up,
    down,
    /** Lets the client flush, then delivers what the host sent. */
    async toMain(): Promise<void> {
      await turn();
      for (const message of up.splice(0)) toServer(message);
    },
    /** Delivers the server's answers to the host. */
    async toHost(): Promise<void> {
      for (const message of down.splice(0)) toClient(message);
      await Promise.resolve();
    },
  };
}

function tracked(promise: Promise<string | null>) {
  const state: { settled: boolean; text: string | null | undefined } = { settled: false, text: undefined };
  void promise.then((text) => {
    state.settled = true;
    state.text = text;
  });
  return state;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('instruction inbox over a port', () => {
  it('send() posts the delivery of a parked wait at once, in its own message', async () => {
    const mailbox = new Mailbox();
    const wire = link(new Map([['a', mailbox]]));
    const result = tracked(wire.client.wait('a', 0, undefined, fresh()));
    await wire.toMain();
    expect(mailbox.isWaiting).toBe(true);
    expect(wire.down).toHaveLength(0);
    mailbox.send('go');
    // No turn, no microtask: the delivery is on the port when send() returns.
    expect(wire.down).toEqual([{ type: 'instruction', ticket: expect.any(Number), text: 'go' }]);
    await wire.toHost();
    expect(result).toEqual({ settled: true, text: 'go' });
    expect(wire.server.parked).toBe(0);
    expect(wire.client.waiting).toBe(0);
  });

  it('waits asked in one turn go up as one message', async () => {
    const mailboxes = new Map(['a', 'b', 'c'].map((id) => [id, new Mailbox()] as const));
    const wire = link(mailboxes);
    for (const id of mailboxes.keys()) void wire.client.wait(id, 0, 5000, fresh());
    await turn();
    expect(wire.up).toHaveLength(1);
    expect(wire.up[0]).toMatchObject({ agents: ['a', 'b', 'c'], abandons: [] });
    expect(wire.up[0]?.waits).toHaveLength(9);
    await wire.toMain();
    expect(wire.server.parked).toBe(3);
  });

  it('an instruction sent before the wait is answered as soon as the wait arrives', async () => {
    const mailbox = new Mailbox();
    mailbox.send('early');
    const wire = link(new Map([['a', mailbox]]));
    const result = tracked(wire.client.wait('a', 0, undefined, fresh()));
    await wire.toMain();
    await wire.toHost();
    expect(result).toEqual({ settled: true, text: 'early' });
    expect(wire.server.parked).toBe(0);
  });

  it('a wait repeated for the same index on a new host (after a crash) gets the same instruction', async () => {
    const mailbox = new Mailbox();
    const mailboxes = new Map([['a', mailbox]]);
    const dead = link(mailboxes);
    void dead.client.wait('a', 0, undefined, fresh());
    await dead.toMain();
    mailbox.send('first');
    mailbox.send('second');
    // The host died before it journaled the instruction: its replacement asks for index 0 again.
    dead.server.close();
    const replacement = link(mailboxes);
    const again = tracked(replacement.client.wait('a', 0, undefined, fresh()));
    await replacement.toMain();
    await replacement.toHost();
    expect(again.text).toBe('first');
    const next = tracked(replacement.client.wait('a', 1, undefined, fresh()));
    await replacement.toMain();
    await replacement.toHost();
    expect(next.text).toBe('second');
  });

  it('a wait that times out on the supervisor resolves null', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const mailbox = new Mailbox();
    const wire = link(new Map([['a', mailbox]]));
    const result = tracked(wire.client.wait('a', 0, 1000, fresh()));
    await wire.toMain();
    vi.advanceTimersByTime(999);
    expect(wire.down).toHaveLength(0);
    vi.advanceTimersByTime(1);
    await wire.toHost();
    expect(result).toEqual({ settled: true, text: null });
    expect(mailbox.isWaiting).toBe(false);
    expect(wire.server.parked).toBe(0);
  });

  it('an abort resolves the wait null at once and the supervisor drops it: a later send posts nothing', async () => {
    const mailbox = new Mailbox();
    const wire = link(new Map([['a', mailbox]]));
    const controller = new AbortController();
    const result = tracked(wire.client.wait('a', 0, undefined, controller.signal));
    await wire.toMain();
    controller.abort(new Error('cancelled'));
    await Promise.resolve();
    expect(result).toEqual({ settled: true, text: null });
    await wire.toMain();
    expect(mailbox.isWaiting).toBe(false);
    expect(wire.server.parked).toBe(0);
    mailbox.send('too late');
    expect(wire.down).toHaveLength(0);
    // The instruction stays in the log for the next wait.
    expect(mailbox.size).toBe(1);
  });

  it('a wait aborted before it was sent is never sent', async () => {
    const wire = link(new Map([['a', new Mailbox()]]));
    const controller = new AbortController();
    const aborted = tracked(wire.client.wait('a', 0, undefined, controller.signal));
    void wire.client.wait('a', 0, undefined, fresh());
    controller.abort();
    await turn();
    expect(wire.up).toHaveLength(1);
    expect(wire.up[0]).toMatchObject({ agents: ['a'], abandons: [] });
    // Only the second wait (ticket 2, index 0, no timeout) went up.
    expect(wire.up[0]?.waits).toEqual([2, 0, INBOX_NO_TIMEOUT]);
    expect(aborted.text).toBeNull();
  });

  it('an answer that crosses the abort of its wait is ignored by the host', async () => {
    const mailbox = new Mailbox();
    const wire = link(new Map([['a', mailbox]]));
    const controller = new AbortController();
    const result = tracked(wire.client.wait('a', 0, undefined, controller.signal));
    await wire.toMain();
    mailbox.send('crossing');
    controller.abort();
    await wire.toHost();
    expect(result.text).toBeNull();
    await wire.toMain();
    expect(wire.server.parked).toBe(0);
  });

  it('the supervisor ending a parked wait (cancel) answers it null', async () => {
    const mailbox = new Mailbox();
    const wire = link(new Map([['a', mailbox]]));
    const result = tracked(wire.client.wait('a', 0, undefined, fresh()));
    await wire.toMain();
    mailbox.abandon();
    await wire.toHost();
    expect(result).toEqual({ settled: true, text: null });
    expect(wire.server.parked).toBe(0);
  });

  it('a wait for an agent that is not running is answered null', async () => {
    const wire = link(new Map());
    const result = tracked(wire.client.wait('ghost', 0, undefined, fresh()));
    await wire.toMain();
    await wire.toHost();
    expect(result).toEqual({ settled: true, text: null });
  });

  it('a dead host’s waits are dropped: nothing stays parked and a later send posts nothing', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const a = new Mailbox();
    const b = new Mailbox();
    const wire = link(
      new Map([
        ['a', a],
        ['b', b],
      ]),
    );
    void wire.client.wait('a', 0, undefined, fresh());
    void wire.client.wait('b', 0, 1000, fresh());
    await wire.toMain();
    expect(wire.server.parked).toBe(2);
    wire.server.close();
    expect(wire.server.parked).toBe(0);
    expect(a.isWaiting).toBe(false);
    expect(b.isWaiting).toBe(false);
    a.send('x');
    vi.advanceTimersByTime(1000);
    expect(wire.down).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an abort listener is added per wait and removed once it is answered or aborted', async () => {
    const mailbox = new Mailbox();
    const wire = link(new Map([['a', mailbox]]));
    const answered = new AbortController();
    const aborted = new AbortController();
    const first = wire.client.wait('a', 0, undefined, answered.signal);
    expect(getEventListeners(answered.signal, 'abort')).toHaveLength(1);
    await wire.toMain();
    mailbox.send('go');
    await wire.toHost();
    await first;
    expect(getEventListeners(answered.signal, 'abort')).toHaveLength(0);
    const second = wire.client.wait('a', 1, undefined, aborted.signal);
    aborted.abort();
    await second;
    expect(getEventListeners(aborted.signal, 'abort')).toHaveLength(0);
  });
});

describe('instruction waits carried in another message', () => {
  it('queues waits and abandons for the carrier, in order, and posts nothing on the port', async () => {
    const posted: unknown[] = [];
    let toClient: (message: InstructionDeliveryMessage) => void = () => {};
    const hostEnd: AdmissionEndpoint<InstructionDeliveryMessage, InboxRequestMessage> = {
      postMessage: (message) => posted.push(message),
      on: (_event, listener) => {
        toClient = listener;
      },
    };
    let carries = 0;
    const client = new InboxClient(hostEnd, () => {
      carries += 1;
    });
    const a = new Mailbox();
    const b = new Mailbox();
    const mainEnd: AdmissionEndpoint<InboxRequestMessage, InstructionDeliveryMessage> = {
      postMessage: (message) => toClient(structuredClone(message)),
      on: () => {},
    };
    const server = new InboxServer(mainEnd, (agentId) =>
      agentId === 'a' ? a : agentId === 'b' ? b : undefined,
    );
    const cancelled = new AbortController();
    const first = tracked(client.wait('a', 0, undefined, cancelled.signal));
    const second = tracked(client.wait('b', 0, 250, fresh()));
    expect(carries).toBe(2);
    await turn();
    expect(posted).toHaveLength(0);
    const batch = client.take();
    expect(batch).toEqual({
      type: 'inbox',
      waits: [1, 0, INBOX_NO_TIMEOUT, 2, 0, 250],
      agents: ['a', 'b'],
      abandons: [],
    });
    expect(client.take()).toBeUndefined();
    server.handle(structuredClone(batch as InboxRequestMessage));
    expect(server.parked).toBe(2);
    cancelled.abort();
    await Promise.resolve();
    expect(first.settled && first.text === null).toBe(true);
    expect(carries).toBe(3);
    const abandon = client.take();
    expect(abandon).toEqual({ type: 'inbox', waits: [], agents: [], abandons: [1] });
    server.handle(structuredClone(abandon as InboxRequestMessage));
    expect(server.parked).toBe(1);
    expect(a.isWaiting).toBe(false);
    b.send('go');
    await turn();
    expect(second).toEqual({ settled: true, text: 'go' });
    expect(posted).toHaveLength(0);
  });
});
