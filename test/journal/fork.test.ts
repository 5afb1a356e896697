/**
 * A retry's copied `Started` records in `forkedFrom` the attempts it continues, newest first. Each
 * retry of an entry adds one id, so the list is bounded (MAX_FORKED_FROM_IDS, 1,000; a small bound
 * here): the newest ids are kept, and a journal holding more is read as that many.
 */
import { describe, expect, it } from 'vitest';
import { MAX_FORKED_FROM_IDS } from '../../src/journal/constants.ts';
import type { AuditEvent } from '../../src/journal/events.ts';
import { forkedInputs, forkOrigins } from '../../src/journal/fork.ts';

const BOUND = 3;

/** A first attempt's `Started`, as far as forking reads it (the rest of the event is carried as is). */
function started(agentId: string, forkedFrom?: readonly string[]): AuditEvent {
  return {
    type: 'Started',
    agentId,
    seq: 1,
    prev: '0',
    hash: '0',
    ts: '2026-01-01T00:00:00.000Z',
    ...(forkedFrom === undefined ? {} : { forkedFrom }),
  } as unknown as AuditEvent;
}

describe('Started.forkedFrom', () => {
  it('keeps the newest ids of a long chain of retries, the one forked from first', () => {
    let from = 'run-0';
    let events: readonly AuditEvent[] = [started(from)];
    for (let attempt = 2; attempt <= 6; attempt += 1) {
      const to = `run-0-r${attempt}`;
      events = forkedInputs(events, to, from, BOUND) as unknown as AuditEvent[];
      from = to;
    }
    // Without the bound the sixth attempt's list held all five earlier attempts.
    expect(forkOrigins(events[0])).toEqual(['run-0-r5', 'run-0-r4', 'run-0-r3']);
  });

  it('reads at most the bound from a journal that holds more', () => {
    const ids = ['e', 'd', 'c', 'b', 'a'];
    expect(forkOrigins(started('x', ids), BOUND)).toEqual(['e', 'd', 'c']);
    expect(forkOrigins(started('x', ids))).toEqual(ids);
    expect(MAX_FORKED_FROM_IDS).toBe(1000);
  });
});
