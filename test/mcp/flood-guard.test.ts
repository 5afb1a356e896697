import { describe, expect, it } from 'vitest';
import { FloodGuard } from '../../src/mcp/flood-guard.ts';

/** A guard on a clock the test moves, with the default bounds. */
function guarded(bytesPerMinute = 64 * 1024 * 1024) {
  const clock = { ms: 1_000_000 };
  const guard = new FloodGuard({ perSecond: 1000, perMinute: 6000, bytesPerMinute }, () => clock.ms);
  return { clock, guard };
}

/** Sends `perSecond` messages of `bytes` a second for `seconds`; the first bound passed, and when. */
function send(
  { clock, guard }: ReturnType<typeof guarded>,
  perSecond: number,
  seconds: number,
  bytes = 0,
): { past: string; second: number } | undefined {
  const start = clock.ms;
  for (let second = 0; second < seconds; second += 1) {
    for (let i = 0; i < perSecond; i += 1) {
      clock.ms = start + second * 1000 + Math.floor((i * 1000) / perSecond);
      const past = guard.count(bytes);
      if (past !== undefined) return { past, second };
    }
  }
  return undefined;
}

describe('FloodGuard', () => {
  it('ends 999 notifications a second within seconds, where the bound per second never would', () => {
    expect(send(guarded(), 999, 3600)).toEqual({
      past: 'more than 6000 notifications in one minute',
      second: 6,
    });
  });

  it('lets 100 a second through for an hour: the minute slides', () => {
    expect(send(guarded(), 100, 3600)).toBeUndefined();
  });

  it('still ends a burst past the bound per second at once', () => {
    expect(send(guarded(), 1001, 1)).toEqual({
      past: 'more than 1000 notifications in one second',
      second: 0,
    });
  });

  it('ends large notifications past the bytes of a minute', () => {
    expect(send(guarded(1_000_000), 10, 60, 20_000)).toEqual({
      past: 'more than 1000000 bytes of notifications in one minute',
      second: 5,
    });
  });
});
