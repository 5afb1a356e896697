import { afterEach, describe, expect, it, vi } from 'vitest';
import { SystemError, TroupeError } from '../../src/errors.ts';
import { cancelledError } from '../../src/loop/outcome.ts';

describe('cancelledError', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('is the plain data of a SystemError cancelled, made without an Error (no stack per queued agent)', () => {
    const toJSON = vi.spyOn(TroupeError.prototype, 'toJSON');
    // A Ctrl-C cancels every queued agent of a fan-out: one call each.
    const errors = Array.from({ length: 1000 }, () => cancelledError('interrupted (Ctrl-C)'));
    expect(toJSON).not.toHaveBeenCalled();
    vi.restoreAllMocks();
    const expected = new SystemError('cancelled', 'Cancelled: interrupted (Ctrl-C)', {
      reason: 'interrupted (Ctrl-C)',
    }).toJSON();
    expect(errors[999]).toEqual(expected);
  });
});
