/**
 * A session's turn cancels where an engine runs it (src/engines/actor/turn-cancels.ts): the turn
 * running now is cancelled at once, a later one when it starts, an ended one not at all.
 */
import { describe, expect, it } from 'vitest';
import { TurnCancels } from '../../src/engines/actor/turn-cancels.ts';

describe('TurnCancels', () => {
  it('cancels the running turn at once, with the reason', () => {
    const turns = new TurnCancels();
    const signal = turns.signal(0);
    turns.cancel(0, 'stop');
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('stop');
  });

  it('keeps a cancel of a later turn until that turn starts, and only for it', () => {
    const turns = new TurnCancels();
    const running = turns.signal(0);
    turns.cancel(2, 'not that one either');
    expect(running.aborted).toBe(false);
    expect(turns.signal(1).aborted).toBe(false);
    const later = turns.signal(2);
    expect(later.aborted).toBe(true);
    expect((later.reason as Error).message).toBe('not that one either');
    expect(turns.signal(3).aborted).toBe(false);
  });

  it('ignores a cancel of a turn that has ended', () => {
    const turns = new TurnCancels();
    turns.signal(0);
    const next = turns.signal(1);
    turns.cancel(0, 'too late');
    expect(next.aborted).toBe(false);
  });
});
