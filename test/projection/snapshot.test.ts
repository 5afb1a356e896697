import { describe, expect, it } from 'vitest';
import { SUPERSEDED_MARKER } from '../../src/constants.ts';
import { isTroupeError, SystemError } from '../../src/errors.ts';
import { Projection } from '../../src/projection/projection.ts';
import { o200kCounter } from '../../src/projection/token-counter.ts';

function sample(): Projection {
  const p = new Projection({ context: ['ctx'], task: 'task', counter: o200kCounter, reserveTokens: 10 });
  p.applyUpdates([
    { key: 'a', text: 'A1' },
    { key: 'b', text: 'B1' },
  ]);
  p.pushHistory('shows a', ['a']);
  p.pushHistory('shows b', ['b']);
  p.applyUpdates([{ key: 'b', text: 'B2' }]);
  p.pushHistory('failed', []);
  return p;
}

describe('projection snapshots', () => {
  it('are plain JSON describing history, displays and state order', () => {
    expect(sample().snapshot()).toEqual({
      version: 1,
      context: ['ctx'],
      task: 'task',
      history: [
        { text: 'shows a', displayedStateKeys: ['a'] },
        { text: SUPERSEDED_MARKER, displayedStateKeys: [] },
        { text: 'failed', displayedStateKeys: [] },
      ],
      states: [
        { key: 'a', text: 'A1' },
        { key: 'b', text: 'B2' },
      ],
    });
  });

  it('rebuild the same render, estimate and behaviour after a JSON round trip', () => {
    const original = sample();
    const copy = Projection.fromSnapshot(JSON.parse(JSON.stringify(original.snapshot())), {
      counter: o200kCounter,
      reserveTokens: 10,
    });
    expect(copy.render()).toBe(original.render());
    expect(copy.estimatedTokens()).toBe(original.estimatedTokens());
    for (const p of [original, copy]) p.applyUpdates([{ key: 'a', text: 'A2' }]);
    expect(copy.render()).toBe(original.render());
    expect(copy.snapshot()).toEqual(original.snapshot());
  });

  it('reject malformed input with the JSON pointer of the problem', () => {
    const good = sample().snapshot();
    const cases: [unknown, string][] = [
      [null, '/'],
      [{ ...good, version: 2 }, '/version'],
      [{ ...good, context: 'ctx' }, '/context'],
      [{ ...good, history: [{ text: 'x', displayedStateKeys: [1] }] }, '/history/0/displayedStateKeys/0'],
      [
        {
          ...good,
          states: [
            { key: 'a', text: 'x' },
            { key: 'a', text: 'y' },
          ],
        },
        '/states/1/key',
      ],
    ];
    for (const [value, pointer] of cases) {
      let error: unknown;
      try {
        Projection.fromSnapshot(value);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(SystemError);
      expect(isTroupeError(error) && error.code).toBe('invalid_projection_snapshot');
      expect(isTroupeError(error) && error.fields.path).toBe(pointer === '/' ? '' : pointer);
    }
  });
});
