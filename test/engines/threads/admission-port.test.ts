import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Admission } from '../../../src/engines/threads/admission.ts';
import { AdmissionServer } from '../../../src/engines/threads/admission-server.ts';
import { hasErrorCode } from '../../../src/errors.ts';
import {
  ADMISSION_ACQUIRE_STRIDE,
  ADMISSION_RELEASE_HOLD_MS,
  type AdmissionEndpoint,
  type AdmissionGrantMessage,
  type AdmissionRequestMessage,
} from '../../../src/protocol/messages.ts';
import { AdmissionClient } from '../../../workers/admission-client.ts';

/** One event-loop turn: the client's and server's setImmediate flushes run. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Two turns: a grant made in a microtask (after a release) schedules its flush behind the first
 * turn's own immediate.
 */
async function settle(): Promise<void> {
  await turn();
  await turn();
}

/** A signal per request, as each provider turn has its own. */
const fresh = (): AbortSignal => new AbortController().signal;

/**
 * A host's admission port pair whose messages wait until the test delivers them, cloned as a
 * MessagePort would clone them, so every interleaving is chosen by the test.
 */
function link(admission: Admission, keys: readonly string[] = ['k'], now?: () => number) {
  const up: AdmissionRequestMessage[] = [];
  const down: AdmissionGrantMessage[] = [];
  let toServer: (message: AdmissionRequestMessage) => void = () => {};
  let toClient: (message: AdmissionGrantMessage) => void = () => {};
  const hostEnd: AdmissionEndpoint<AdmissionGrantMessage, AdmissionRequestMessage> = {
    postMessage: (message) => up.push(structuredClone(message)),
    on: (_event, listener) => {
      toClient = listener;
    },
  };
  const mainEnd: AdmissionEndpoint<AdmissionRequestMessage, AdmissionGrantMessage> = {
    postMessage: (message) => down.push(structuredClone(message)),
    on: (_event, listener) => {
      toServer = listener;
    },
  };
  const client = new AdmissionClient(hostEnd, keys, now);
  const server = new AdmissionServer(admission, keys, mainEnd);
  let sentUp = 0;
  let sentDown = 0;
  return {
    client,
    server,
    up,
    down,
    get sentUp() {
      return sentUp + up.length;
    },
    get sentDown() {
      return sentDown + down.length;
    },
    /** Delivers what the host sent, then lets the server's grants (made in microtasks) flush. */
    async toMain(): Promise<void> {
      const messages = up.splice(0);
      sentUp += messages.length;
      for (const message of messages) toServer(message);
      await settle();
    },
    /** Delivers the server's grants to the host. */
    async toHost(): Promise<void> {
      const messages = down.splice(0);
      sentDown += messages.length;
      for (const message of messages) toClient(message);
      await settle();
    },
    /** Both ways until nothing is in flight. */
    async pump(): Promise<void> {
      await settle();
      while (up.length > 0 || down.length > 0) {
        await this.toMain();
        await this.toHost();
      }
    },
  };
}

function tracked(promise: Promise<number>) {
  const state: { grantId: number | undefined; error: unknown } = { grantId: undefined, error: undefined };
  promise.then(
    (grantId) => {
      state.grantId = grantId;
    },
    (error: unknown) => {
      state.error = error;
    },
  );
  return state;
}

describe('admission over a port', () => {
  it('N acquires in one turn go up as one message, and their grants come back as one', async () => {
    const wire = link(new Admission({ k: { concurrency: 500 } }, () => {}));
    const grants = Array.from({ length: 300 }, (_, i) => wire.client.acquire('k', 0, i, fresh()));
    await turn();
    expect(wire.up).toHaveLength(1);
    expect(wire.up[0]?.acquires).toHaveLength(300 * ADMISSION_ACQUIRE_STRIDE);
    await wire.toMain();
    expect(wire.down).toHaveLength(1);
    expect(wire.down[0]?.grants).toHaveLength(300 * 2);
    await wire.toHost();
    const ids = await Promise.all(grants);
    expect(new Set(ids).size).toBe(300);
    expect(wire.server.held).toBe(300);
  });

  it("a turn's releases and new acquires share one message", async () => {
    // A clock that stands still: on a loaded machine the real one passed the release hold
    // (ADMISSION_RELEASE_HOLD_MS) between the releases and the acquires, which sent them apart.
    const wire = link(new Admission({ k: { concurrency: 2 } }, () => {}), ['k'], () => 0);
    const first = [wire.client.acquire('k', 0, 1, fresh()), wire.client.acquire('k', 0, 1, fresh())];
    await wire.pump();
    for (const grantId of await Promise.all(first)) wire.client.release(grantId);
    const next = [wire.client.acquire('k', 0, 1, fresh()), wire.client.acquire('k', 0, 1, fresh())];
    await turn();
    expect(wire.up).toHaveLength(1);
    expect(wire.up[0]?.releases).toHaveLength(2);
    expect(wire.up[0]?.acquires).toHaveLength(2 * ADMISSION_ACQUIRE_STRIDE);
    await wire.pump();
    await Promise.all(next);
    expect(wire.server.held).toBe(2);
  });

  it(`a release held ${ADMISSION_RELEASE_HOLD_MS} ms in a long turn goes up at once, with what was queued`, async () => {
    let clock = 0;
    const wire = link(new Admission({ k: { concurrency: 3 } }, () => {}), ['k'], () => clock);
    const first = Array.from({ length: 3 }, () => wire.client.acquire('k', 0, 1, fresh()));
    await wire.pump();
    const [a, b, c] = await Promise.all(first);
    wire.client.release(a ?? 0);
    const next = wire.client.acquire('k', 0, 1, fresh());
    clock += ADMISSION_RELEASE_HOLD_MS / 2;
    wire.client.release(b ?? 0);
    expect(wire.up).toHaveLength(0);
    clock += ADMISSION_RELEASE_HOLD_MS / 2;
    wire.client.release(c ?? 0);
    expect(wire.up).toHaveLength(1);
    expect(wire.up[0]?.releases).toHaveLength(3);
    expect(wire.up[0]?.acquires).toHaveLength(ADMISSION_ACQUIRE_STRIDE);
    await turn();
    expect(wire.up).toHaveLength(1);
    await wire.pump();
    await next;
    expect(wire.server.held).toBe(1);
  });

  it('an acquire made once a release has been held its longest sends both at once', async () => {
    let clock = 0;
    const wire = link(new Admission({ k: { concurrency: 1 } }, () => {}), ['k'], () => clock);
    await wire.pump();
    const first = wire.client.acquire('k', 0, 1, fresh());
    await wire.pump();
    wire.client.release(await first);
    clock += ADMISSION_RELEASE_HOLD_MS;
    const next = wire.client.acquire('k', 0, 1, fresh());
    expect(wire.up).toHaveLength(1);
    expect(wire.up[0]?.releases).toHaveLength(1);
    expect(wire.up[0]?.acquires).toHaveLength(ADMISSION_ACQUIRE_STRIDE);
    await wire.pump();
    await next;
    expect(wire.server.held).toBe(1);
  });

  it('a request aborted before it was sent is never sent and rejects with the reason', async () => {
    const wire = link(new Admission({ k: { concurrency: 1 } }, () => {}));
    const controller = new AbortController();
    const kept = wire.client.acquire('k', 0, 1, fresh());
    const aborted = tracked(wire.client.acquire('k', 0, 1, controller.signal));
    controller.abort(new Error('gone'));
    await turn();
    expect(wire.up).toHaveLength(1);
    // Only the first request (ticket 1, key 0, priority 0, 1 token) went up.
    expect(wire.up[0]?.acquires).toEqual([1, 0, 0, 1]);
    expect(aborted.error).toMatchObject({ message: 'gone' });
    await wire.pump();
    await kept;
    expect(wire.server.waiting).toBe(0);
    expect(wire.client.waiting).toBe(0);
  });

  it('a request aborted while it waits on the supervisor is cancelled there and leaks no slot', async () => {
    const wire = link(new Admission({ k: { concurrency: 2 } }, () => {}));
    const holders = [wire.client.acquire('k', 0, 1, fresh()), wire.client.acquire('k', 0, 1, fresh())];
    const controller = new AbortController();
    const waiter = tracked(wire.client.acquire('k', 0, 1, controller.signal));
    await wire.pump();
    expect(wire.server.waiting).toBe(1);
    controller.abort(new Error('cancelled'));
    await turn();
    expect(waiter.error).toMatchObject({ message: 'cancelled' });
    expect(wire.up[0]?.cancels).toHaveLength(1);
    await wire.pump();
    expect(wire.server.waiting).toBe(0);
    for (const grantId of await Promise.all(holders)) wire.client.release(grantId);
    await wire.pump();
    expect(wire.server.held).toBe(0);
    // Both places are free again: two new requests are granted together.
    const later = [wire.client.acquire('k', 0, 1, fresh()), wire.client.acquire('k', 0, 1, fresh())];
    await wire.pump();
    await Promise.all(later);
    expect(wire.server.held).toBe(2);
  });

  it('a grant that crosses the abort of its request is released, once, by both sides', async () => {
    const wire = link(new Admission({ k: { concurrency: 1 } }, () => {}));
    const holder = wire.client.acquire('k', 0, 1, fresh());
    const controller = new AbortController();
    const crossing = tracked(wire.client.acquire('k', 0, 1, controller.signal));
    await wire.pump();
    wire.client.release(await holder);
    await turn();
    await wire.toMain();
    // The supervisor granted the waiting request; its grant is on the way when the host aborts.
    expect(wire.server.held).toBe(1);
    expect(wire.down).toHaveLength(1);
    controller.abort(new Error('late'));
    await turn();
    await wire.toMain();
    expect(wire.server.held).toBe(0);
    await wire.toHost();
    expect(crossing.error).toMatchObject({ message: 'late' });
    expect(crossing.grantId).toBeUndefined();
    await wire.pump();
    expect(wire.server.held).toBe(0);
    const next = tracked(wire.client.acquire('k', 0, 1, fresh()));
    await wire.pump();
    expect(next.grantId).toBeDefined();
  });

  it('closing a dead host’s server frees its slots and drops its waiting tickets for the other hosts', async () => {
    const admission = new Admission({ k: { concurrency: 2 } }, () => {});
    const dying = link(admission);
    const other = link(admission);
    dying.client.acquire('k', 0, 1, fresh());
    dying.client.acquire('k', 0, 1, fresh());
    dying.client.acquire('k', 0, 1, fresh());
    await dying.pump();
    const waiting = [other.client.acquire('k', 0, 1, fresh()), other.client.acquire('k', 0, 1, fresh())];
    await other.pump();
    expect(dying.server.held).toBe(2);
    expect(dying.server.waiting).toBe(1);
    expect(other.server.waiting).toBe(2);
    dying.server.close();
    await other.pump();
    await Promise.all(waiting);
    expect(other.server.held).toBe(2);
    expect(dying.server.held).toBe(0);
    expect(dying.server.waiting).toBe(0);
  });

  it('keys without limits skip the port: the client says so and refuses to ask', async () => {
    const wire = link(new Admission({ k: { concurrency: 1 } }, () => {}));
    expect(wire.client.limits('k')).toBe(true);
    expect(wire.client.limits('free')).toBe(false);
    const error = await wire.client.acquire('free', 0, 1, fresh()).catch((e) => e);
    expect(hasErrorCode(error, 'unknown_admission_key')).toBe(true);
    await turn();
    expect(wire.sentUp).toBe(0);
  });

  it('an abort listener is added per waiting request and removed once it is granted or aborted', async () => {
    const wire = link(new Admission({ k: { concurrency: 1 } }, () => {}));
    const granted = new AbortController();
    const aborted = new AbortController();
    const first = wire.client.acquire('k', 0, 1, granted.signal);
    const second = wire.client.acquire('k', 0, 1, aborted.signal).catch(() => {});
    expect(getEventListeners(granted.signal, 'abort')).toHaveLength(1);
    await wire.pump();
    await first;
    expect(getEventListeners(granted.signal, 'abort')).toHaveLength(0);
    aborted.abort();
    await second;
    expect(getEventListeners(aborted.signal, 'abort')).toHaveLength(0);
  });
});
