import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { PROTOCOL_TOKEN_RESERVE, REMOVED_MARKER, SUPERSEDED_MARKER } from '../../src/constants.ts';
import { isTroupeError } from '../../src/errors.ts';
import { Calibrator } from '../../src/projection/calibrator.ts';
import { RESULT_NOT_FITTED_TEXT } from '../../src/projection/constants.ts';
import { Projection } from '../../src/projection/projection.ts';
import {
  cl100kCounter,
  heuristicCounter,
  o200kCounter,
  type TokenCounter,
} from '../../src/projection/token-counter.ts';
import type { ProjectionChange } from '../../src/projection/types.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const corpusText = readFileSync(
  path.resolve(repoRoot, 'test/fixtures/corpus/agents-md/openai__openai-agents-js/AGENTS.md'),
  'utf8',
);

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw');
}

const wordCounter: TokenCounter = {
  name: 'words',
  count: (text) => text.split(/\s+/).filter((word) => word !== '').length,
};

const counters = [heuristicCounter, o200kCounter, cl100kCounter, wordCounter];

function busyProjection(counter: TokenCounter): Projection {
  const p = new Projection({ context: [corpusText.slice(0, 400)], task: 'Summarise the repo.', counter });
  p.applyUpdates([
    { key: 'a', text: corpusText.slice(400, 900) },
    { key: 'b', text: corpusText.slice(900, 1300) },
  ]);
  p.pushHistory('Tool call: read a', ['a']);
  p.pushHistory(corpusText.slice(1300, 1700));
  p.pushHistory('shows b.', ['b']);
  return p;
}

describe.each(counters.map((counter) => [counter.name, counter] as const))(
  'budget with %s',
  (_name, counter) => {
    it('estimatedTokens is counter(render) + the default reserve', () => {
      const p = busyProjection(counter);
      expect(p.renderTokens()).toBe(counter.count(p.render()));
      expect(p.estimatedTokens()).toBe(counter.count(p.render()) + PROTOCOL_TOKEN_RESERVE);
    });

    it('withCandidate changes nothing and equals the estimate after the change', () => {
      const changes: ProjectionChange[] = [
        { text: corpusText.slice(2000, 2600), displayedStateKeys: ['b'] },
        { stateUpdates: [{ key: 'a', text: 'new a.' }] },
        { stateUpdates: [{ key: 'b', text: null }], text: 'removed b' },
        { text: 'failed', ok: false, stateUpdates: [{ key: 'a', text: null }] },
      ];
      for (const change of changes) {
        const p = busyProjection(counter);
        const render = p.render();
        const snapshot = p.snapshot();
        const estimate = p.estimatedTokens();
        const candidate = p.withCandidate(change);
        expect(p.render()).toBe(render);
        expect(p.snapshot()).toEqual(snapshot);
        expect(p.estimatedTokens()).toBe(estimate);
        p.apply(change);
        expect(p.estimatedTokens()).toBe(candidate);
        expect(p.renderTokens()).toBe(counter.count(p.render()));
      }
    });
  },
);

describe('fit checks do not render', () => {
  it('count only changed text and short seams, never the whole render (o200k)', () => {
    const p = busyProjection(o200kCounter);
    for (let i = 0; i < 50; i++) p.pushHistory(corpusText.slice(i * 40, i * 40 + 400), [`k${i % 5}`]);
    const renderLength = p.render().length;
    const spy = vi.spyOn(o200kCounter, 'count');
    try {
      const result = corpusText.slice(3000, 3300);
      p.fitsCandidate({ text: result, stateUpdates: [{ key: 'k1', text: result }] }, 1_000_000);
      p.fitsState('a', 'new a', 1_000_000);
      p.fits(1_000_000);
      p.addToolResult({ text: result, ok: true }, { maxInputTokens: 1_000_000 });
      const counted = spy.mock.calls.map(([text]) => text.length);
      expect(counted.length).toBeGreaterThan(0);
      expect(Math.max(...counted)).toBeLessThan(400);
      expect(counted.reduce((sum, n) => sum + n, 0)).toBeLessThan(renderLength / 4);
    } finally {
      spy.mockRestore();
    }
  });

  it('never call the heuristic counter: its ledger sums code points', () => {
    const p = busyProjection(heuristicCounter);
    const spy = vi.spyOn(heuristicCounter, 'count');
    try {
      p.fitsCandidate({ text: 'x', stateUpdates: [{ key: 'a', text: 'y' }] }, 1_000_000);
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});

describe('custom counters', () => {
  it('stay exact when their first count happens inside a trial', () => {
    const p = new Projection({ task: 'one two', counter: wordCounter, reserveTokens: 0 });
    expect(p.withCandidate({ text: 'three four five' })).toBe(5);
    expect(p.estimatedTokens()).toBe(2);
  });

  it('must have a count function', () => {
    const counter = { name: 'broken' } as unknown as TokenCounter;
    const error = caught(() => new Projection({ counter }));
    expect(isTroupeError(error) && error.code).toBe('invalid_option');
  });
});

describe('fits', () => {
  it('compares the estimate with the limit inclusively', () => {
    const p = new Projection({ task: 'abcd', reserveTokens: 10 });
    expect(p.estimatedTokens()).toBe(11);
    expect(p.fits(11)).toBe(true);
    expect(p.fits(10)).toBe(false);
  });

  it('counts the heuristic on the whole render, not per section', () => {
    // Per-section ceilings would give 3 (plus separators); the render has 7 code points: 2 tokens.
    const p = new Projection({ context: ['a', 'b'], task: 'c', reserveTokens: 0 });
    expect(p.render()).toBe('a\n\nb\n\nc');
    expect(p.estimatedTokens()).toBe(2);
  });

  it('counts code points, not UTF-16 units', () => {
    const p = new Projection({ task: '😀😀😀😀', reserveTokens: 0 });
    expect(p.estimatedTokens()).toBe(1);
  });

  it('fitsState answers for a replacement and a removal without changing anything', () => {
    const p = new Projection({ task: 't', reserveTokens: 0 });
    p.applyUpdates([{ key: 'k', text: 'x'.repeat(40) }]);
    expect(p.estimatedTokens()).toBe(Math.ceil(43 / 4));
    expect(p.fitsState('k', 'x'.repeat(400), 50)).toBe(false);
    expect(p.fitsState('k', 'x'.repeat(100), 50)).toBe(true);
    expect(p.fitsState('k', null, 1)).toBe(true);
    expect(p.state('k')).toBe('x'.repeat(40));
  });

  it('rejects a limit that is not a positive number', () => {
    const p = new Projection();
    for (const limit of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      const error = caught(() => p.fits(limit));
      expect(isTroupeError(error) && error.code).toBe('invalid_option');
    }
  });

  it('uses a configured reserve', () => {
    const p = new Projection({ task: 'abcd', reserveTokens: 0 });
    expect(p.tokenEstimate()).toEqual({
      renderTokens: 1,
      reserveTokens: 0,
      rawTokens: 1,
      estimatedTokens: 1,
    });
  });
});

describe('addToolResult under a limit', () => {
  it('adds a result that fits and reports its estimate', () => {
    const p = new Projection({ task: 't', reserveTokens: 0 });
    const admission = p.addToolResult({ text: 'small', ok: true }, { maxInputTokens: 100 });
    expect(admission).toEqual({ accepted: true, candidateTokens: p.estimatedTokens() });
    expect(p.render()).toBe('t\n\nsmall');
  });

  it('adds the not-fitted text instead of a result that would not fit, and changes no state', () => {
    const p = new Projection({ task: 't', reserveTokens: 0 });
    p.pushHistory('shows k', ['k']);
    const before = p.snapshot();
    const big = 'y'.repeat(4000);
    const admission = p.addToolResult(
      { text: big, ok: true, stateUpdates: [{ key: 'k', text: big }], displayedStateKeys: ['k'] },
      { maxInputTokens: 200 },
    );
    expect(admission.accepted).toBe(false);
    expect(admission.candidateTokens).toBeGreaterThan(1000);
    expect(p.snapshot()).toEqual({
      ...before,
      history: [...before.history, { text: RESULT_NOT_FITTED_TEXT, displayedStateKeys: [] }],
    });
    expect(p.render()).toBe(`t\n\nshows k\n\n${RESULT_NOT_FITTED_TEXT}`);
  });

  it('uses the caller’s not-fitted text', () => {
    const p = new Projection({ reserveTokens: 0 });
    p.addToolResult(
      { text: 'z'.repeat(100), ok: true },
      { maxInputTokens: 5, notFittedText: 'Tool result: too big' },
    );
    expect(p.render()).toBe('Tool result: too big');
  });
});

describe('markers in the budget', () => {
  it('counts superseded and removed markers exactly', () => {
    for (const counter of [heuristicCounter, o200kCounter]) {
      const p = new Projection({ counter, reserveTokens: 0 });
      p.pushHistory('v1 of a', ['a']);
      p.pushHistory('v1 of b', ['b']);
      p.applyUpdates([
        { key: 'a', text: 'a2' },
        { key: 'b', text: null },
      ]);
      expect(p.render()).toBe(`${SUPERSEDED_MARKER}\n\n${REMOVED_MARKER}\n\na2`);
      expect(p.renderTokens()).toBe(counter.count(p.render()));
    }
  });
});

describe('calibration', () => {
  it('scales the raw estimate by what receipts taught the calibrator', () => {
    const calibrator = new Calibrator();
    const p = new Projection({
      task: 'x'.repeat(400),
      reserveTokens: 0,
      calibration: { calibrator, model: 'm' },
    });
    expect(p.estimatedTokens()).toBe(100);
    calibrator.record({ model: 'm', actualInputTokens: 150, estimatedTokens: p.tokenEstimate().rawTokens });
    expect(p.tokenEstimate()).toEqual({
      renderTokens: 100,
      reserveTokens: 0,
      rawTokens: 100,
      estimatedTokens: 150,
    });
    expect(p.fits(149)).toBe(false);
    expect(p.withCandidate({ text: 'y'.repeat(398) })).toBe(Math.ceil(200 * 1.5));
  });

  it('never lowers the estimate below the raw count', () => {
    const calibrator = new Calibrator();
    calibrator.record({ model: 'm', actualInputTokens: 50, estimatedTokens: 100 });
    const p = new Projection({
      task: 'x'.repeat(400),
      reserveTokens: 0,
      calibration: { calibrator, model: 'm' },
    });
    expect(p.estimatedTokens()).toBe(100);
  });
});
