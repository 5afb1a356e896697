import { describe, expect, it } from 'vitest';
import { REMOVED_MARKER, SUPERSEDED_MARKER } from '../../src/constants.ts';
import { hasErrorCode, UserError } from '../../src/errors.ts';
import { Projection } from '../../src/projection/projection.ts';
import type { ProjectionChange } from '../../src/projection/types.ts';
import type { ToolOutcome } from '../../src/tools/types.ts';

function occurrences(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

describe('Projection render', () => {
  it('renders context, task, history, then undisplayed states, joined by one blank line', () => {
    const p = new Projection({ context: ['ctx one', 'ctx two'], task: 'the task' });
    p.pushHistory('entry one');
    p.applyUpdates([{ key: 'file', text: 'file body' }]);
    p.pushHistory('entry two');
    expect(p.render()).toBe('ctx one\n\nctx two\n\nthe task\n\nentry one\n\nentry two\n\nfile body');
  });

  it('drops empty sections, including an empty task and empty states', () => {
    const p = new Projection({ context: ['', 'ctx', ''], task: '' });
    p.pushHistory('');
    p.pushHistory('h');
    p.applyUpdates([{ key: 'empty', text: '' }]);
    expect(p.render()).toBe('ctx\n\nh');
    expect(p.state('empty')).toBe('');
    expect(new Projection().render()).toBe('');
  });

  it('keeps the text of sections byte-exact, newlines and all', () => {
    const p = new Projection({ task: '\n\ntask\n' });
    p.pushHistory('  indented\n');
    expect(p.render()).toBe('\n\ntask\n\n\n  indented\n');
  });

  it('does not render a state that a history entry displays', () => {
    const p = new Projection({ task: 't' });
    p.applyUpdates([{ key: 'k', text: 'K v1' }]);
    p.pushHistory('read k: K v1', ['k']);
    expect(p.render()).toBe('t\n\nread k: K v1');
  });

  it('renders what changed between renders, however it changed (appends, trials, updates, empty sections)', () => {
    const p = new Projection({ task: '' });
    expect(p.render()).toBe('');
    p.pushHistory('a');
    p.pushHistory('');
    p.pushHistory('b');
    expect(p.render()).toBe('a\n\nb');
    expect(p.withCandidate({ text: 'tried' })).toBeGreaterThan(0);
    p.pushHistory('c');
    expect(p.withCandidate({ text: 'tried too' })).toBeGreaterThan(0);
    expect(p.render()).toBe('a\n\nb\n\nc');
    p.applyUpdates([{ key: 'k', text: 'K' }]);
    p.pushHistory('d');
    expect(p.render()).toBe('a\n\nb\n\nc\n\nd\n\nK');
    p.pushHistory('e');
    expect(p.render()).toBe('a\n\nb\n\nc\n\nd\n\ne\n\nK');
    p.applyUpdates([{ key: 'k', text: null }]);
    p.pushHistory('shows k', ['k']);
    expect(p.withCandidate({ text: 'x', stateUpdates: [{ key: 'k', text: 'K2' }] })).toBeGreaterThan(0);
    expect(p.render()).toBe('a\n\nb\n\nc\n\nd\n\ne\n\nshows k');
    p.pushHistory('f');
    expect(p.render()).toBe('a\n\nb\n\nc\n\nd\n\ne\n\nshows k\n\nf');
  });

  it('keeps context and task immutable copies', () => {
    const context = ['a'];
    const p = new Projection({ context, task: 't' });
    context.push('b');
    expect(p.context).toEqual(['a']);
    expect(Object.isFrozen(p.context)).toBe(true);
  });
});

describe('state supersession', () => {
  it('replacing a state twice keeps one copy, the latest, after the history', () => {
    const p = new Projection({ task: 't' });
    p.applyUpdates([{ key: 'k', text: 'v1' }]);
    p.pushHistory('h1');
    p.applyUpdates([{ key: 'k', text: 'v2' }]);
    p.applyUpdates([{ key: 'k', text: 'v3' }]);
    expect(p.render()).toBe('t\n\nh1\n\nv3');
    expect(p.stateKeys()).toEqual(['k']);
  });

  it('an update supersedes every earlier entry displaying the key, and only those', () => {
    const p = new Projection();
    p.pushHistory('shows a', ['a']);
    p.pushHistory('shows b', ['b']);
    p.pushHistory('shows a again', ['a']);
    p.pushHistory('plain');
    p.applyUpdates([{ key: 'a', text: 'A2' }]);
    expect(p.render()).toBe(`${SUPERSEDED_MARKER}\n\nshows b\n\n${SUPERSEDED_MARKER}\n\nplain\n\nA2`);
  });

  it('a removal uses the removed marker and drops the state', () => {
    const p = new Projection();
    p.applyUpdates([{ key: 'k', text: 'v1' }]);
    p.pushHistory('shows k', ['k']);
    p.applyUpdates([{ key: 'k', text: null }]);
    expect(p.render()).toBe(REMOVED_MARKER);
    expect(p.state('k')).toBeUndefined();
    expect(p.stateKeys()).toEqual([]);
  });

  it('removing a key nobody has set or displayed changes nothing', () => {
    const p = new Projection({ task: 't' });
    p.pushHistory('h');
    p.applyUpdates([{ key: 'ghost', text: null }]);
    expect(p.render()).toBe('t\n\nh');
  });

  it('orders a superseded marker before later history and the current state after it', () => {
    const p = new Projection({ task: 't' });
    p.pushHistory('first view of k', ['k']);
    p.pushHistory('later entry');
    p.applyUpdates([{ key: 'k', text: 'k now' }]);
    p.pushHistory('latest entry');
    expect(p.render()).toBe(`t\n\n${SUPERSEDED_MARKER}\n\nlater entry\n\nlatest entry\n\nk now`);
  });

  it('moves an updated state after the states that were not updated', () => {
    const p = new Projection();
    p.applyUpdates([
      { key: 'a', text: 'A' },
      { key: 'b', text: 'B' },
      { key: 'c', text: 'C' },
    ]);
    p.applyUpdates([{ key: 'a', text: 'A2' }]);
    expect(p.render()).toBe('B\n\nC\n\nA2');
    expect(p.stateKeys()).toEqual(['b', 'c', 'a']);
  });

  it('an entry superseded through one key releases the other keys it displayed, in their place', () => {
    const p = new Projection();
    p.applyUpdates([
      { key: 'a', text: 'A' },
      { key: 'b', text: 'B' },
      { key: 'c', text: 'C' },
    ]);
    p.pushHistory('shows a and b', ['a', 'b']);
    expect(p.render()).toBe('shows a and b\n\nC');
    p.applyUpdates([{ key: 'a', text: 'A2' }]);
    expect(p.render()).toBe(`${SUPERSEDED_MARKER}\n\nB\n\nC\n\nA2`);
    expect(p.snapshot().history[0]?.displayedStateKeys).toEqual([]);
  });

  it('a state displayed by two entries stays hidden until both stop displaying it', () => {
    const p = new Projection();
    p.applyUpdates([{ key: 'b', text: 'B' }]);
    p.pushHistory('shows a, b', ['a', 'b']);
    p.pushHistory('shows b', ['b']);
    p.applyUpdates([{ key: 'a', text: 'A' }]);
    expect(p.render()).toBe(`${SUPERSEDED_MARKER}\n\nshows b\n\nA`);
  });
});

describe('tool results', () => {
  it('a result that displays a key it also updates appears exactly once, in the history', () => {
    const big = `file.txt\n${'line of a large file\n'.repeat(2000)}`;
    const p = new Projection({ task: 't' });
    p.pushHistory('old view', ['file.txt']);
    p.addToolResult({
      text: big,
      ok: true,
      stateUpdates: [{ key: 'file.txt', text: big }],
      displayedStateKeys: ['file.txt'],
    });
    const render = p.render();
    expect(occurrences(render, big)).toBe(1);
    expect(render).toBe(`t\n\n${SUPERSEDED_MARKER}\n\n${big}`);
    expect(p.state('file.txt')).toBe(big);
  });

  it('a large stateful result renders exactly once after later updates elsewhere', () => {
    const big = 'x '.repeat(50_000);
    const p = new Projection();
    p.addToolResult({ text: 'wrote it', ok: true, stateUpdates: [{ key: 'big', text: big }] });
    p.addToolResult({ text: 'other', ok: true, stateUpdates: [{ key: 'small', text: 's' }] });
    expect(occurrences(p.render(), big)).toBe(1);
  });

  it('failed outcomes add their text and change nothing else', () => {
    const p = new Projection({ task: 't' });
    p.applyUpdates([{ key: 'k', text: 'v1' }]);
    p.pushHistory('shows k', ['k']);
    const before = p.snapshot();
    p.addToolResult({
      text: 'edit failed: disk full',
      ok: false,
      stateUpdates: [
        { key: 'k', text: 'v2' },
        { key: 'new', text: 'n' },
      ],
      displayedStateKeys: ['k', 'other'],
    });
    const after = p.snapshot();
    expect(after.states).toEqual(before.states);
    expect(after.history.slice(0, -1)).toEqual(before.history);
    expect(after.history.at(-1)).toEqual({ text: 'edit failed: disk full', displayedStateKeys: [] });
    expect(p.render()).toBe('t\n\nshows k\n\nedit failed: disk full');
  });

  it('takes a ToolOutcome as it is', () => {
    const outcome: ToolOutcome = {
      text: 'read k',
      ok: true,
      displayedStateKeys: ['k'],
      stateUpdates: [{ key: 'k', text: 'K' }],
      retryable: false,
      data: { any: 'thing' },
    };
    const p = new Projection();
    expect(p.addToolResult(outcome).accepted).toBe(true);
    expect(p.render()).toBe('read k');
  });

  it('applies a change with updates but no text without adding an entry', () => {
    const p = new Projection();
    p.apply({ stateUpdates: [{ key: 'k', text: 'v' }] });
    expect(p.historyLength).toBe(0);
    expect(p.render()).toBe('v');
  });

  it('applies several updates of one result in order', () => {
    const p = new Projection();
    p.pushHistory('shows k', ['k']);
    p.apply({
      text: 'r',
      stateUpdates: [
        { key: 'k', text: 'v1' },
        { key: 'k', text: null },
        { key: 'j', text: 'J' },
      ],
    });
    expect(p.render()).toBe(`${SUPERSEDED_MARKER}\n\nr\n\nJ`);
  });
});

describe('input checks', () => {
  it('rejects a malformed change with a UserError naming the field, and changes nothing', () => {
    const p = new Projection();
    const bad = { text: 'x', stateUpdates: [{ key: 1, text: 'v' }] } as unknown as ProjectionChange;
    let error: unknown;
    try {
      p.apply(bad);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UserError);
    expect(hasErrorCode(error, 'invalid_projection_change')).toBe(true);
    expect(String(error)).toMatch(/stateUpdates\[0\]\.key/);
    expect(p.historyLength).toBe(0);
  });

  it('rejects a negative or fractional reserve', () => {
    expect(() => new Projection({ reserveTokens: -1 })).toThrow(/reserveTokens/);
    expect(() => new Projection({ reserveTokens: 1.5 })).toThrow(/non-negative integer/);
  });
});
