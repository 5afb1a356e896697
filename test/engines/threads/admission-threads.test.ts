import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ThreadCrashed } from '../../../src/supervisor/events.ts';
import { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { addToCounter, SLOT_COUNTERS, waitForCounter } from '../../fixtures/supervisor/slot-provider.ts';
import { fixtures, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
let counters: Int32Array | undefined;
afterEach(async () => {
  // Let anything still held finish, so close() does not wait out the grace period.
  if (counters) addToCounter(counters, SLOT_COUNTERS.gate, 1_000);
  await supervisor?.close();
  supervisor = undefined;
  counters = undefined;
});

function slotSupervisor(concurrency: number): { supervisor: Supervisor; counters: Int32Array } {
  const buffer = new SharedArrayBuffer(SLOT_COUNTERS.length * Int32Array.BYTES_PER_ELEMENT);
  const shared = new Int32Array(buffer);
  const cwd = tempDir();
  const created = new Supervisor({
    threads: 2,
    cwd,
    providers: {
      slots: {
        kind: 'module',
        module: path.join(fixtures, 'slot-provider.ts'),
        options: { counters: buffer, markerDir: cwd },
      },
    },
    defaultProvider: 'slots',
    limits: { slots: { concurrency } },
    restart: { maxRetries: 3, baseDelayMs: 10, maxDelayMs: 50 },
  });
  supervisor = created;
  counters = shared;
  return { supervisor: created, counters: shared };
}

describe('provider admission across threads', () => {
  it('a concurrency limit of K holds across both threads while many agents ask at once', async () => {
    const K = 3;
    const AGENTS = 40;
    const { supervisor, counters } = slotSupervisor(K);
    const handles = Array.from({ length: AGENTS }, (_, i) =>
      supervisor.spawn('worker', { task: `Agent ${i}: hold until 1.` }),
    );
    // Every agent has asked and K hold a slot; the rest must wait for as long as the gate is shut.
    await waitForCounter(counters, SLOT_COUNTERS.asked, (asked) => asked === AGENTS);
    await waitForCounter(counters, SLOT_COUNTERS.inFlight, (held) => held === K);
    addToCounter(counters, SLOT_COUNTERS.gate, 1);
    const outcomes = await Promise.all(handles.map((h) => h.result));
    expect(outcomes.map((o) => o.status)).toEqual(Array(AGENTS).fill('completed'));
    expect(Atomics.load(counters, SLOT_COUNTERS.maxInFlight)).toBe(K);
    expect(Atomics.load(counters, SLOT_COUNTERS.inFlight)).toBe(0);
  });

  it('an agent cancelled while it waits for a slot ends at once and leaks no slot', async () => {
    const K = 2;
    const { supervisor, counters } = slotSupervisor(K);
    const crashes: ThreadCrashed[] = [];
    supervisor.on('thread:crashed', (e) => crashes.push(e));
    const holders = [0, 1].map((i) => supervisor.spawn('worker', { task: `Holder ${i}: hold until 1.` }));
    await waitForCounter(counters, SLOT_COUNTERS.inFlight, (held) => held === K);
    const waiter = supervisor.spawn('worker', { task: 'Waiter: hold until 1.' });
    await waitForCounter(counters, SLOT_COUNTERS.asked, (asked) => asked === K + 1);
    waiter.cancel('no longer needed');
    // It ends while the holders still hold every slot: the wait for a slot was abandoned.
    expect(await waiter.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
    expect(Atomics.load(counters, SLOT_COUNTERS.inFlight)).toBe(K);

    addToCounter(counters, SLOT_COUNTERS.gate, 1);
    for (const holder of holders) expect((await holder.result).status).toBe('completed');
    // All K slots are free again: K new agents hold one each at the same time.
    const later = Array.from({ length: K + 1 }, (_, i) =>
      supervisor.spawn('worker', { task: `Later ${i}: hold until 2.` }),
    );
    await waitForCounter(counters, SLOT_COUNTERS.inFlight, (held) => held === K);
    addToCounter(counters, SLOT_COUNTERS.gate, 1);
    for (const agent of later) expect((await agent.result).status).toBe('completed');
    expect(Atomics.load(counters, SLOT_COUNTERS.maxInFlight)).toBe(K);
    expect(crashes).toEqual([]);
  });

  it('a thread that dies holding a slot gives it back: with one slot, every agent still completes', async () => {
    const { supervisor, counters } = slotSupervisor(1);
    const crashes: ThreadCrashed[] = [];
    supervisor.on('thread:crashed', (e) => crashes.push(e));
    const crashing = supervisor.spawn('worker', { task: 'Crash while holding the slot.' });
    const others = Array.from({ length: 5 }, (_, i) => supervisor.spawn('worker', { task: `Plain ${i}.` }));
    expect((await crashing.result).status).toBe('completed');
    for (const other of others) expect((await other.result).status).toBe('completed');
    expect(crashes).toHaveLength(1);
    expect(crashes[0]?.agents).toContain(crashing.id);
    expect(Atomics.load(counters, SLOT_COUNTERS.maxInFlight)).toBe(1);
  });
});
