import fc from 'fast-check';
import PQueue from 'p-queue';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Admission, type SlotRequest } from '../../../src/engines/threads/admission.ts';
import { Gate, type LaneEntry } from '../../../src/engines/threads/admission-lanes.ts';

/** Lets every queued microtask (and p-queue's deferred starts) run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

type Op =
  | { readonly kind: 'acquire'; readonly priority: number }
  | { readonly kind: 'release'; readonly pick: number }
  | { readonly kind: 'cancel'; readonly pick: number }
  | { readonly kind: 'pause' }
  | { readonly kind: 'resume' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('acquire' as const), priority: fc.integer({ min: 0, max: 2 }) }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'pause' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'resume' as const }) },
);

/** A lane driven by ops: which request numbers started, in order. */
interface Driven {
  acquire(n: number, priority: number): void;
  release(n: number): void;
  cancel(n: number): void;
  pause(): void;
  resume(): void;
  readonly started: number[];
}

function gateDriven(concurrency: number): Driven {
  const gate = new Gate(concurrency);
  const started: number[] = [];
  const finishes = new Map<number, () => void>();
  const entries = new Map<number, LaneEntry>();
  return {
    started,
    acquire: (n, priority) => {
      const entry: LaneEntry = {
        id: n,
        start: (finish) => {
          started.push(n);
          finishes.set(n, finish);
        },
      };
      entries.set(n, entry);
      gate.enqueue(entry, priority);
    },
    release: (n) => finishes.get(n)?.(),
    cancel: (n) => {
      const entry = entries.get(n);
      if (entry) gate.remove(entry);
    },
    pause: () => gate.pause(),
    resume: () => gate.resume(),
  };
}

function pQueueDriven(concurrency: number): Driven {
  const queue = new PQueue({ concurrency });
  const started: number[] = [];
  const finishes = new Map<number, () => void>();
  const controllers = new Map<number, AbortController>();
  return {
    started,
    acquire: (n, priority) => {
      const controller = new AbortController();
      controllers.set(n, controller);
      queue
        .add(
          () =>
            new Promise<void>((finish) => {
              started.push(n);
              finishes.set(n, finish);
            }),
          { priority, signal: controller.signal },
        )
        .catch(() => {});
    },
    release: (n) => finishes.get(n)?.(),
    cancel: (n) => controllers.get(n)?.abort(),
    pause: () => queue.pause(),
    resume: () => queue.start(),
  };
}

describe('the concurrency gate starts requests in exactly the order p-queue does', () => {
  it('for any mix of acquires (with priorities), releases, cancels, pauses and resumes, within and across turns', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.array(opArb, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 25 }),
        async (concurrency, turns) => {
          const gate = gateDriven(concurrency);
          const reference = pQueueDriven(concurrency);
          // Both sides see the same op on the same request number; picks index the requests that
          // are running (release) or waiting (cancel) on the reference side.
          let next = 0;
          const released = new Set<number>();
          const cancelled = new Set<number>();
          for (const ops of turns) {
            for (const op of ops) {
              const running = reference.started.filter((n) => !released.has(n));
              const waiting = Array.from({ length: next }, (_, n) => n).filter(
                (n) => !reference.started.includes(n) && !cancelled.has(n),
              );
              if (op.kind === 'acquire') {
                gate.acquire(next, op.priority);
                reference.acquire(next, op.priority);
                next += 1;
              } else if (op.kind === 'release' && running.length > 0) {
                const n = running[op.pick % running.length] ?? 0;
                released.add(n);
                gate.release(n);
                reference.release(n);
              } else if (op.kind === 'cancel' && waiting.length > 0) {
                const n = waiting[op.pick % waiting.length] ?? 0;
                cancelled.add(n);
                gate.cancel(n);
                reference.cancel(n);
              } else if (op.kind === 'pause') {
                gate.pause();
                reference.pause();
              } else if (op.kind === 'resume') {
                gate.resume();
                reference.resume();
              }
            }
            await settle();
            expect(gate.started).toEqual(reference.started);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

function grantsOf(admission: Admission, key: string, count: number, tokens = 1) {
  const granted: number[] = [];
  const requests: SlotRequest[] = [];
  for (let i = 0; i < count; i += 1) {
    requests.push(admission.acquire(key, 0, tokens, (grantId) => granted.push(grantId)));
  }
  return { granted, requests };
}

describe('Admission', () => {
  it('grants a key without limits at once, synchronously', () => {
    const admission = new Admission({}, () => {});
    const { granted, requests } = grantsOf(admission, 'free', 3);
    expect(granted).toHaveLength(3);
    expect(requests.every((r) => r.granted)).toBe(true);
  });

  it('holds a concurrency limit and hands a released place to the next waiter', async () => {
    const admission = new Admission({ k: { concurrency: 2 } }, () => {});
    const { granted, requests } = grantsOf(admission, 'k', 3);
    expect(granted).toHaveLength(2);
    expect(requests[2]?.granted).toBe(false);
    admission.release(granted[0] ?? 0);
    await settle();
    expect(granted).toHaveLength(3);
    expect(requests[2]?.granted).toBe(true);
  });

  it('a cancelled waiting request never takes a place, and cancelling a granted one does nothing', async () => {
    const admission = new Admission({ k: { concurrency: 1 } }, () => {});
    const { granted, requests } = grantsOf(admission, 'k', 3);
    expect(requests[0]?.cancel()).toBe(false);
    expect(requests[1]?.cancel()).toBe(true);
    expect(requests[1]?.cancel()).toBe(false);
    admission.release(granted[0] ?? 0);
    await settle();
    expect(granted).toHaveLength(2);
    expect(requests[1]?.granted).toBe(false);
    expect(requests[2]?.granted).toBe(true);
  });

  it('a request cancelled while waiting does not count against a request rate', async () => {
    // Two starts per minute: the cancelled request must not use the second one.
    const admission = new Admission(
      { k: { concurrency: 1, requestsPerInterval: { count: 2, intervalMs: 60_000 } } },
      () => {},
    );
    const first = grantsOf(admission, 'k', 2);
    expect(first.granted).toHaveLength(1);
    expect(first.requests[1]?.cancel()).toBe(true);
    const later = grantsOf(admission, 'k', 1);
    admission.release(first.granted[0] ?? 0);
    await settle();
    expect(later.granted).toHaveLength(1);
  });

  it('a request cancelled while it waits for tokens gives its concurrency place back', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const admission = new Admission({ k: { concurrency: 1, tokensPerMinute: 100 } }, () => {});
    const first = grantsOf(admission, 'k', 1, 100);
    admission.release(first.granted[0] ?? 0);
    await settle();
    // The budget is spent for a minute: the next request holds the place while it waits for tokens.
    const metering = grantsOf(admission, 'k', 1, 100);
    const behind = grantsOf(admission, 'k', 1, 100);
    expect(metering.requests[0]?.cancel()).toBe(true);
    await settle();
    await vi.advanceTimersByTimeAsync(60_001);
    expect(metering.granted).toEqual([]);
    expect(behind.granted).toHaveLength(1);
  });

  it('a backoff pauses the key for everyone until it ends', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const backoffs: [string, number][] = [];
    const admission = new Admission({ k: { concurrency: 5 } }, (key, ms) => backoffs.push([key, ms]));
    admission.backoff('k', 1000);
    const { granted } = grantsOf(admission, 'k', 2);
    expect(granted).toEqual([]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(granted).toHaveLength(2);
    expect(backoffs).toEqual([['k', 1000]]);
  });

  it('close() drops waiting requests and frees every place', async () => {
    const admission = new Admission({ k: { concurrency: 1 } }, () => {});
    const { granted } = grantsOf(admission, 'k', 2);
    admission.close();
    await settle();
    expect(granted).toHaveLength(1);
    const after = grantsOf(admission, 'k', 1);
    expect(after.granted).toHaveLength(1);
  });
});
