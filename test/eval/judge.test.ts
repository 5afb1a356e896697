/** The judge scorer: an agent definition grading answers, run through a real Supervisor on a scripted model. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDefinition } from '../../src/definition/load.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { parseVerdict } from '../../src/eval/judge.ts';
import { Scoring } from '../../src/eval/scoring.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import type { Script } from '../fixtures/eval/routed-scripted-provider.ts';
import { item } from './helpers.ts';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/eval');

function definition(name: string, body: string): AgentDefinition {
  const parsed = parseDefinition(
    `---\nname: ${name}\ndescription: Grades answers.\ntools: [complete_task]\n---\n${body}\n`,
    `${name}.md`,
    { source: 'project' },
  );
  if (!parsed.definition) throw new Error(JSON.stringify(parsed.errors));
  return parsed.definition;
}

const judge = definition('judge', 'You are JUDGE-A. Grade strictly.');
const failingJudge = definition('broken-judge', 'You are JUDGE-B.');
const sloppyJudge = definition('sloppy-judge', 'You are JUDGE-C.');
const chattyJudge = definition('chatty-judge', 'You are JUDGE-D.');

let dir: string;
let supervisor: Supervisor;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-judge-'));
  const scripts: Script[] = [
    {
      match: 'JUDGE-A',
      result: { score: 0.8, pass: true, reason: 'Names the backoff but not the cap.' },
      usage: { inputTokens: 100, outputTokens: 20 },
    },
    { match: 'JUDGE-B', error: { code: 'server_error', message: 'the judge model is down' } },
    { match: 'JUDGE-C', result: { score: 4, reason: 'out of range' } },
    { match: 'JUDGE-D', text: 'Looks great to me!\n\nScore: 10/10' },
  ];
  supervisor = new Supervisor({
    threads: 1,
    providers: {
      scripted: {
        kind: 'module',
        module: path.join(fixtures, 'routed-scripted-provider.ts'),
        options: { scripts },
      },
    },
    journalDir: dir,
    cwd: dir,
    compat: false,
    definitions: [judge, failingJudge, sloppyJudge, chattyJudge],
  });
});
afterAll(async () => {
  await supervisor.close();
  rmSync(dir, { recursive: true, force: true });
});

async function scoringFor(agent: string, extra: Record<string, unknown> = {}) {
  return Scoring.create({
    scorers: [
      {
        type: 'judge',
        name: 'quality',
        agent,
        rubric: 'Must name the retry count and the backoff.',
        ...extra,
      },
    ],
    spawner: supervisor,
    resolveAgent: (name) => [judge, failingJudge, sloppyJudge, chattyJudge].find((d) => d.name === name),
  });
}

describe('judge scorer', () => {
  it('runs the judge agent on the supervisor and takes its score, verdict and reason', async () => {
    const scoring = await scoringFor('judge');
    const scores = await scoring.score(
      item(
        { summary: 'Retries 3 times with exponential backoff.' },
        'Retries 3 times, 250 ms base, 4 s cap.',
        {
          agentId: 'run-7',
          index: 7,
          task: 'Summarise the retry policy.',
        },
      ),
    );
    expect(scores.quality).toEqual({
      score: 0.8,
      pass: true,
      detail: 'Names the backoff but not the cap.',
      judge: {
        agentId: 'run-7-judge-quality',
        usage: expect.objectContaining({ inputTokens: 100, outputTokens: 20 }),
        costUsd: null, // the scripted model has no price: unknown, not $0
      },
    });
    // The judge was told the rubric, the task, the reference and the answer, and was held to the verdict schema.
    const started = readJournal(path.join(dir, 'run-7-judge-quality.jsonl')).events[0];
    if (started?.type !== 'Started') throw new Error('no Started event');
    expect(started.task).toContain('Rubric:\nMust name the retry count and the backoff.');
    expect(started.task).toContain("The agent's task:\nSummarise the retry policy.");
    expect(started.task).toContain(
      'The expected answer (reference):\nRetries 3 times, 250 ms base, 4 s cap.',
    );
    expect(started.task).toContain(
      `The agent's answer:\n{"summary":"Retries 3 times with exponential backoff."}`,
    );
    expect(started.metadata).toEqual({ judgeOf: 'run-7', scorer: 'quality', index: 7 });
    const completeTask = started.toolSpecs.find((spec) => spec.name === 'complete_task');
    expect(JSON.stringify(completeTask?.parameters)).toContain('"required":["score","reason"]');
  });

  it('applies the threshold when the judge gives no pass of its own', () => {
    expect(parseVerdict({ score: 0.6, reason: 'ok' }, 0.7)).toEqual({
      score: 0.6,
      pass: false,
      detail: 'ok',
    });
    expect(parseVerdict({ score: 0.6 }, 0.5)).toEqual({ score: 0.6, pass: true });
  });

  it('scores a judge that fails as an error carrying the reason', async () => {
    const scoring = await scoringFor('broken-judge');
    const scores = await scoring.score(item('answer', undefined, { agentId: 'run-8' }));
    expect(scores.quality).toMatchObject({
      score: 0,
      pass: false,
      error: expect.stringMatching(/^the judge failed \(provider_error\): .*the judge model is down/),
      judge: { agentId: 'run-8-judge-quality' },
    });
  });

  it('scores a verdict outside 0..1 as an error', async () => {
    const scoring = await scoringFor('sloppy-judge');
    const scores = await scoring.score(item('answer', undefined, { agentId: 'run-9' }));
    expect(scores.quality).toMatchObject({
      pass: false,
      error: "the judge's score must be a number from 0 to 1, got 4",
    });
  });

  it('scores a judge that answers in prose instead of a verdict as an error quoting what it said', async () => {
    const scoring = await scoringFor('chatty-judge');
    const scores = await scoring.score(item('answer', undefined, { agentId: 'run-11' }));
    expect(scores.quality).toMatchObject({
      score: 0,
      pass: false,
      error:
        'the judge finished without delivering a verdict with complete_task; it said: "Looks great to me! Score: 10/10"',
      judge: { agentId: 'run-11-judge-quality' },
    });
  });

  it('does not run a judge for an item whose agent failed', async () => {
    const scoring = await scoringFor('judge');
    const spawned: string[] = [];
    const onSpawned = (event: { agentId: string }): void => {
      spawned.push(event.agentId);
    };
    supervisor.on('agent:spawned', onSpawned);
    const scores = await scoring.score(
      item(undefined, undefined, { agentId: 'run-10', status: 'failed', failure: 'budget: too many tokens' }),
    );
    supervisor.off('agent:spawned', onSpawned);
    expect(scores.quality).toEqual({
      score: 0,
      pass: false,
      detail: 'the agent failed (budget: too many tokens)',
    });
    expect(spawned).toEqual([]);
  });
});
