import { getEventListeners } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Scoring } from '../../src/eval/scoring.ts';
import { prepareScorers } from '../../src/eval/spec.ts';
import { summarizeScores } from '../../src/eval/summary.ts';
import type { ScorerSpec } from '../../src/eval/types.ts';
import { item } from './helpers.ts';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/eval');

async function scoreOne(spec: Record<string, unknown>, ...inputs: Parameters<typeof item>) {
  const scoring = await Scoring.create({ scorers: prepareScorers([spec], fixtures) });
  const name = (spec.name as string | undefined) ?? (spec.type as string);
  const score = (await scoring.score(item(...inputs)))[name];
  if (score === undefined) throw new Error(`no score named ${name}`);
  return score;
}

describe('exact', () => {
  it('passes on deep equality, whatever the key order', async () => {
    expect(await scoreOne({ type: 'exact' }, { a: 1, b: [1, 2] }, { b: [1, 2], a: 1 })).toEqual({
      score: 1,
      pass: true,
    });
  });

  it('fails with what was expected and what came', async () => {
    expect(await scoreOne({ type: 'exact' }, 'Paris ', 'Paris')).toEqual({
      score: 0,
      pass: false,
      detail: 'expected "Paris", got "Paris "',
    });
  });

  it('trims and ignores case when asked', async () => {
    expect((await scoreOne({ type: 'exact', trim: true, ignoreCase: true }, ' PARIS\n', 'paris')).pass).toBe(
      true,
    );
  });

  it('compares with a constant `value` instead of the expected data', async () => {
    expect((await scoreOne({ type: 'exact', value: 'yes' }, 'yes')).pass).toBe(true);
  });

  it('is an error, not a fail, when the item has no expected value', async () => {
    expect(await scoreOne({ type: 'exact' }, 'anything')).toEqual({
      score: 0,
      pass: false,
      error: 'the item has no `expected` value (and the scorer gives none)',
    });
  });

  it('fails an item whose agent failed, saying why', async () => {
    const score = await scoreOne({ type: 'exact' }, undefined, 'x', {
      status: 'failed',
      failure: 'step_limit: 8 steps',
    });
    expect(score).toEqual({ score: 0, pass: false, detail: 'the agent failed (step_limit: 8 steps)' });
  });
});

describe('jsonPath', () => {
  it('compares the value at `path` with the expected value at `expectedPath`', async () => {
    const spec = { type: 'jsonPath', path: '$.verdict', expectedPath: '$.verdict' };
    expect(
      (await scoreOne(spec, { verdict: 'pass', summary: 's' }, { verdict: 'pass', note: 'n' })).pass,
    ).toBe(true);
    expect(await scoreOne(spec, { verdict: 'fail' }, { verdict: 'pass' })).toMatchObject({
      pass: false,
      detail: 'expected "pass", got "fail"',
    });
  });

  it('compares with `equals` when given', async () => {
    expect((await scoreOne({ type: 'jsonPath', path: '$.n', equals: 3 }, { n: 3 })).pass).toBe(true);
  });

  it('fails when the path selects nothing', async () => {
    expect(await scoreOne({ type: 'jsonPath', path: '$.verdict' }, { other: 1 }, 'pass')).toMatchObject({
      pass: false,
      detail: '$.verdict selects nothing in the output',
    });
  });

  it('is an error when `expectedPath` finds nothing in the expected data', async () => {
    expect(
      await scoreOne({ type: 'jsonPath', path: '$.v', expectedPath: '$.w' }, { v: 1 }, { v: 1 }),
    ).toMatchObject({ error: "the item's `expected` has nothing at $.w" });
  });
});

describe('regex', () => {
  it('passes when the pattern matches somewhere in the output text', async () => {
    expect((await scoreOne({ type: 'regex', pattern: '\\b42\\b' }, 'The answer is 42.')).pass).toBe(true);
    expect(await scoreOne({ type: 'regex', pattern: '^42$' }, 'The answer is 42.')).toMatchObject({
      pass: false,
      detail: '/^42$/ does not match "The answer is 42."',
    });
  });

  it("uses the item's expected value as the pattern when the scorer has none", async () => {
    expect((await scoreOne({ type: 'regex', flags: 'i' }, 'Verdict: PASS', 'verdict: pass')).pass).toBe(true);
  });

  it('matches structured output as its JSON text', async () => {
    expect((await scoreOne({ type: 'regex', pattern: '"verdict":"pass"' }, { verdict: 'pass' })).pass).toBe(
      true,
    );
  });

  it('scores an unsafe pattern from the data set as an error instead of running it', async () => {
    expect(await scoreOne({ type: 'regex' }, 'aaa', '(a)\\1')).toMatchObject({
      pass: false,
      error: expect.stringMatching(/RE2 syntax/),
    });
  });
});

describe('schema', () => {
  const schema = {
    type: 'object',
    required: ['verdict'],
    properties: { verdict: { enum: ['pass', 'fail'] } },
  };

  it('passes output that validates and lists the problems of output that does not', async () => {
    expect((await scoreOne({ type: 'schema', schema }, { verdict: 'pass' })).pass).toBe(true);
    expect(await scoreOne({ type: 'schema', schema }, { verdict: 'maybe' })).toMatchObject({
      pass: false,
      detail: '`/verdict` must be equal to one of the allowed values',
    });
  });

  it("validates against the item's expected value when the scorer has no schema", async () => {
    expect((await scoreOne({ type: 'schema' }, 3, { type: 'integer' })).pass).toBe(true);
    expect((await scoreOne({ type: 'schema' }, 'x', { type: 'integer' })).pass).toBe(false);
  });

  it('takes the boolean schemas true and false, as the scorer schema or the expected value', async () => {
    expect((await scoreOne({ type: 'schema', schema: true }, 'anything')).pass).toBe(true);
    expect((await scoreOne({ type: 'schema', schema: false }, 'anything')).pass).toBe(false);
    expect((await scoreOne({ type: 'schema' }, { any: 1 }, true)).pass).toBe(true);
    expect(await scoreOne({ type: 'schema' }, 3, false)).toMatchObject({ pass: false });
    expect(await scoreOne({ type: 'schema' }, 3, 'integer')).toMatchObject({
      error: 'expected a JSON Schema as the expected value, got "integer"',
    });
  });
});

describe('numeric', () => {
  it('passes within the absolute or relative tolerance', async () => {
    expect((await scoreOne({ type: 'numeric', tolerance: 0.01 }, 10.004, 10)).pass).toBe(true);
    expect((await scoreOne({ type: 'numeric', relativeTolerance: 0.05 }, '104', 100)).pass).toBe(true);
    expect(await scoreOne({ type: 'numeric', tolerance: 0.5 }, 12, 10)).toMatchObject({
      pass: false,
      detail: 'expected 10 ± 0.5, got 12 (off by 2)',
    });
  });

  it('fails text that is not exactly a number', async () => {
    expect(await scoreOne({ type: 'numeric' }, 'about 10', 10)).toMatchObject({
      pass: false,
      detail: 'expected a number, got "about 10"',
    });
  });

  it('reads the number at `path`', async () => {
    expect((await scoreOne({ type: 'numeric', path: '$.total' }, { total: 7 }, 7)).pass).toBe(true);
  });
});

describe('contains', () => {
  it('gives partial credit for each expected string found', async () => {
    expect(
      await scoreOne({ type: 'contains' }, 'retries 3 times with backoff', ['3 times', 'backoff', '429']),
    ).toEqual({
      score: 2 / 3,
      pass: false,
      detail: 'missing "429"',
    });
    expect((await scoreOne({ type: 'contains', ignoreCase: true }, 'BACKOFF', 'backoff')).pass).toBe(true);
  });
});

describe('module scorers', () => {
  it("calls the module's function and takes its score and detail", async () => {
    expect(
      await scoreOne({ type: 'module', module: 'scorers.ts', export: 'wordCount' }, 'one two three', 4),
    ).toEqual({
      score: 0.75,
      pass: true,
      detail: '3 words',
    });
    expect(await scoreOne({ type: 'module', module: 'scorers.ts' }, 'long enough answer')).toEqual({
      score: 1,
      pass: true,
    });
    expect(
      await scoreOne({ type: 'module', module: 'scorers.ts', export: 'always', name: 'ok' }, 'x'),
    ).toEqual({
      score: 1,
      pass: true,
    });
  });

  it('turns a throw, a value out of range and a function that never answers into errors', async () => {
    const scoring = await Scoring.create({
      scorers: prepareScorers(
        [
          { type: 'module', module: 'scorers.ts', export: 'throws', name: 'throws' },
          { type: 'module', module: 'scorers.ts', export: 'outOfRange', name: 'range' },
          { type: 'module', module: 'scorers.ts', export: 'notANumber', name: 'nan' },
          { type: 'module', module: 'scorers.ts', export: 'neverAnswers', name: 'never' },
        ],
        fixtures,
      ),
      functionTimeoutMs: 50,
    });
    const scores = await scoring.score(item('x'));
    expect(scores.throws).toEqual({
      score: 0,
      pass: false,
      error: 'the scorer function failed: scorer exploded',
    });
    expect(scores.range?.error).toMatch(
      /^expected the scorer function to return a number from 0 to 1.*got 7$/,
    );
    // Not `null`, which is what NaN becomes in JSON.
    expect(scores.nan?.error).toMatch(/got NaN$/);
    expect(scores.never).toEqual({
      score: 0,
      pass: false,
      error: 'the scorer function failed: no answer within 50 ms',
    });
  });

  it('says what a function threw when it is not an Error, and scores the other scorers', async () => {
    const scoring = await Scoring.create({
      scorers: prepareScorers(
        [
          { type: 'module', module: 'scorers.ts', export: 'throwsObject', name: 'object' },
          { type: 'module', module: 'scorers.ts', export: 'throwsBareObject', name: 'bare' },
          { type: 'module', module: 'scorers.ts', export: 'always', name: 'ok' },
        ],
        fixtures,
      ),
    });
    const scores = await scoring.score(item('x'));
    expect(scores.object).toEqual({
      score: 0,
      pass: false,
      error:
        'the scorer function threw a value that is not an Error: {"code":"E_GRADER","reason":"no rubric"}',
    });
    expect(scores.bare).toEqual({
      score: 0,
      pass: false,
      error: 'the scorer function threw a value that is not an Error: {"code":"E_BARE"}',
    });
    expect(scores.ok).toEqual({ score: 1, pass: true });
  });

  it('stops waiting for a function that never answers as soon as the scoring is aborted', async () => {
    const controller = new AbortController();
    const scoring = await Scoring.create({
      scorers: prepareScorers(
        [{ type: 'module', module: 'scorers.ts', export: 'neverAnswers', name: 'never' }],
        fixtures,
      ),
      signal: controller.signal,
      // The default 60 s: only the abort can end this call within the test's timeout.
    });
    const pending = scoring.score(item('x'));
    controller.abort(new Error('interrupted (Ctrl-C)'));
    const scores = await pending;
    expect(scores.never).toEqual({
      score: 0,
      pass: false,
      error: 'the scorer function did not finish: interrupted (Ctrl-C)',
    });
    // Scoring again after the abort does not call the function at all.
    expect((await scoring.score(item('y'))).never?.error).toBe(
      'the scorer function did not finish: interrupted (Ctrl-C)',
    );
  });

  it('runs at most `functionConcurrency` calls of a scorer function at once', async () => {
    // `troupe score` scores every entry of a run at once, and a fan-out's items finish faster than
    // a slow function (one that runs the item's tests) scores them: 20,000 calls at once otherwise.
    const globals = globalThis as { __troupeScorerOverlap?: { now: number; max: number } };
    globals.__troupeScorerOverlap = { now: 0, max: 0 };
    const scoring = await Scoring.create({
      scorers: prepareScorers([{ type: 'module', module: 'scorers.ts', export: 'countsOverlap' }], fixtures),
      functionConcurrency: 3,
    });
    const all = await Promise.all(
      Array.from({ length: 30 }, (_, index) => scoring.score(item('x', undefined, { index }))),
    );
    expect(all.every((scores) => scores.module?.pass === true)).toBe(true);
    expect(globals.__troupeScorerOverlap?.max).toBe(3);
    delete globals.__troupeScorerOverlap;
  });

  it('stops calling a function after 5 calls in a row got no answer, so a hung one cannot hold a run for hours', async () => {
    // With calls queued `functionConcurrency` at a time, 20,000 items of a hung function would each
    // wait out the timeout in turn: 20,000 / 16 x 60 s, some 21 hours.
    const globals = globalThis as { __troupeHungScorerCalls?: number };
    globals.__troupeHungScorerCalls = 0;
    const scoring = await Scoring.create({
      scorers: prepareScorers(
        [{ type: 'module', module: 'scorers.ts', export: 'neverAnswersCounted', name: 'hung' }],
        fixtures,
      ),
      functionConcurrency: 2,
      functionTimeoutMs: 20,
    });
    const all = await Promise.all(
      Array.from({ length: 30 }, (_, index) => scoring.score(item('x', undefined, { index }))),
    );
    const errors = all.map((scores) => scores.hung?.error);
    expect(
      errors.filter((error) => error === 'the scorer function failed: no answer within 20 ms').length,
    ).toBe(globals.__troupeHungScorerCalls);
    // The 5th timeout finds the 6th call already running (2 at a time); nothing is called after it.
    expect(globals.__troupeHungScorerCalls).toBe(6);
    expect(errors.at(-1)).toBe(
      'the scorer function was not called: its last 5 calls got no answer within 20 ms (troupe score RUN_DIR scores again)',
    );
    delete globals.__troupeHungScorerCalls;
  });

  it('listens to the abort signal once per scorer, not once per call in flight', async () => {
    // One listener per call made a 16-agent fan-out print MaxListenersExceededWarning.
    const controller = new AbortController();
    const scoring = await Scoring.create({
      scorers: prepareScorers([{ type: 'module', module: 'scorers.ts', export: 'neverAnswers' }], fixtures),
      functionConcurrency: 16,
      signal: controller.signal,
    });
    const pending = Array.from({ length: 16 }, (_, index) => scoring.score(item('x', undefined, { index })));
    await new Promise((resolve) => setImmediate(resolve));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort(new Error('done'));
    expect((await Promise.all(pending)).every((scores) => scores.module?.error !== undefined)).toBe(true);
  });

  it('does not pass an item whose agent failed, whatever the function would say', async () => {
    expect(
      await scoreOne({ type: 'module', module: 'scorers.ts', export: 'always', name: 'ok' }, undefined, 'x', {
        status: 'failed',
        failure: 'provider_error: HTTP 500',
      }),
    ).toEqual({ score: 0, pass: false, detail: 'the agent failed (provider_error: HTTP 500)' });
  });

  it('refuses, before scoring anything, an export that is not a function', async () => {
    await expect(
      Scoring.create({
        scorers: prepareScorers([{ type: 'module', module: 'scorers.ts', export: 'notAFunction' }], fixtures),
      }),
    ).rejects.toMatchObject({ code: 'scorer_module', message: expect.stringContaining('got number') });
  });
});

describe('scorer declarations', () => {
  it('reports every problem with its path', () => {
    let problems: unknown;
    try {
      prepareScorers(
        [
          'exact',
          'exact',
          { type: 'regex', pattern: '(?=x)' },
          { type: 'jsonPath' },
          { type: 'numeric', tolerance: -1, extra: true },
          { type: 'judge' },
          { type: 'module', module: 'missing.ts' },
          { type: 'fuzzy' },
        ],
        fixtures,
      );
    } catch (error) {
      problems = (error as { code: string; fields: { problems: unknown } }).fields.problems;
    }
    expect(problems).toEqual([
      {
        path: '[1]',
        message: expect.stringMatching(
          /^expected a scorer name not used before in this list, got `"exact"` \(string\) again/,
        ),
      },
      { path: '[2].pattern', message: expect.stringMatching(/RE2 syntax/) },
      { path: '[3].path', message: 'expected a JSONPath into the output, such as `$.verdict`, got nothing' },
      {
        path: '[4].extra',
        message: expect.stringMatching(/^expected one of the keys of a `numeric` scorer/),
      },
      { path: '[4].tolerance', message: 'expected a number ≥ 0, got `-1` (number)' },
      { path: '[5].agent', message: 'expected the name of the agent that grades, got nothing' },
      { path: '[6].module', message: expect.stringMatching(/^expected an existing module file/) },
      {
        path: '[7].type',
        message: expect.stringMatching(
          /^expected one of exact, jsonPath, regex, schema, numeric, contains, judge, module, got `"fuzzy"`/,
        ),
      },
    ]);
  });

  it('a judge without a spawner is refused before anything is scored', async () => {
    await expect(
      Scoring.create({ scorers: [{ type: 'judge', name: 'j', agent: 'judge' }] }),
    ).rejects.toMatchObject({
      code: 'judge_needs_spawner',
    });
  });
});

describe('summarizeScores', () => {
  it('counts every item, an unscored one as not passed', () => {
    const scorers: ScorerSpec[] = [{ type: 'exact', name: 'exact' }];
    const summary = summarizeScores(scorers, [
      { index: 0, agentId: 'a-0', scores: { exact: { score: 1, pass: true } } },
      { index: 1, agentId: 'a-1', scores: { exact: { score: 0, pass: false, error: 'no expected value' } } },
      { index: 2, agentId: null, scores: undefined },
      { index: 3, id: 'q4', agentId: 'a-3', scores: { exact: { score: 1, pass: true, detail: 'ok' } } },
    ]);
    expect(summary.scorers.exact).toEqual({
      type: 'exact',
      items: 4,
      passed: 2,
      errors: 1,
      notScored: 1,
      passRate: 0.5,
      meanScore: 0.5,
    });
    expect(summary.items[3]).toEqual({
      index: 3,
      id: 'q4',
      agentId: 'a-3',
      scores: { exact: { score: 1, pass: true, detail: 'ok' } },
    });
  });
});
