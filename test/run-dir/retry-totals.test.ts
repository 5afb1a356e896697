/**
 * A retried plan entry (`troupe resume --retry-failed`) continues a fork of its failed attempt's
 * journal: its result line's usage holds the failed attempt's requests too. The run's totals
 * (summary.json, `troupe report`, the budget a later session starts from) count every request the
 * server was asked once.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatCost, formatTokens } from '../../src/run-dir/format.ts';
import { renderHtmlReport, runPage } from '../../src/run-dir/html-report.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { reportText, runSummaryOf } from '../../src/run-dir/report-text.ts';
import { planResume } from '../../src/run-dir/resume-plan.ts';
import { RunDirWriter, readRunDir } from '../../src/run-dir/run-dir.ts';
import type { RunEvent } from '../../src/run-dir/run-events.ts';
import { resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../src/run-dir/session.ts';
import { summarize } from '../../src/run-dir/summary.ts';
import { buildTimeline } from '../../src/run-dir/timeline.ts';
import { SPEND } from '../fixtures/supervisor/spent-provider.ts';
import { readResults, tempDir } from './helpers.ts';

const fixtures = path.resolve(import.meta.dirname, '../fixtures/supervisor');

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-retry-totals-'));
});
afterEach(() => cleanup());

const REQUEST_COST =
  (SPEND.usage.inputTokens * SPEND.price.inputPerMTok +
    SPEND.usage.outputTokens * SPEND.price.outputPerMTok) /
  1e6;

describe('run totals across a retried plan entry', () => {
  it('count the failed attempt once: the retry adds only the requests it made', async () => {
    const log = path.join(dir, 'requests.log');
    writeFileSync(
      path.join(dir, 'plan.yaml'),
      [
        'cwd: .',
        'threads: 1',
        'provider:',
        `  module: ${path.join(fixtures, 'counted-provider.ts')}`,
        'providerOptions:',
        `  log: ${log}`,
        'toolModules:',
        `  - { module: ${path.join(fixtures, 'fault-tools.ts')}, export: faultTools }`,
        // Two requests (note, nap), then out of steps: Failed(step_limit).
        'limits: { maxSteps: 2 }',
        'runs:',
        '  - { agent: worker, task: "call nap" }',
      ].join('\n'),
    );
    const { plan, definitions } = await loadPlan(path.join(dir, 'plan.yaml'));
    const provider = chooseProvider({ plan: plan.provider, options: plan.providerOptions, env: {} });
    const runPlan = resolveRunPlan(plan, provider, {}, 'counted');
    const writer = RunDirWriter.create(path.join(dir, 'run'), runPlan);
    const [run] = runPlan.runs;
    if (run === undefined) throw new Error('the plan has no run');
    const first = await new FanoutSession({
      plan: runPlan,
      writer,
      work: [{ run, agentId: run.agentId, attempt: 1, resume: false }],
      kind: 'fanout',
      definitions,
    }).run();
    expect(first.summary.counts).toMatchObject({ failed: 1 });

    // As `troupe resume --retry-failed` runs it, with room for one more request.
    const { limits: _limits, ...unlimited } = runPlan;
    const retried = await new FanoutSession({
      plan: unlimited,
      writer,
      work: [{ run, agentId: `${run.agentId}-r2`, attempt: 2, resume: false, retryOf: run.agentId }],
      kind: 'resume',
      definitions,
      existing: readResults(writer.paths.results),
    }).run();
    const served = readFileSync(log, 'utf8')
      .split('\n')
      .filter((line) => line !== '').length;
    expect(served).toBe(3);
    const lines = readResults(writer.paths.results);
    expect(lines.map((line) => [line.attempt, line.status, line.steps])).toEqual([
      [1, 'failed', 2],
      [2, 'completed', 3],
    ]);
    // Each line says what its agent's outcome says (its whole history)...
    expect(lines[1]?.usage.inputTokens).toBe(3 * SPEND.usage.inputTokens);
    expect(lines[1]?.inherited?.usage.inputTokens).toBe(2 * SPEND.usage.inputTokens);
    // ...and the run's totals count each served request once.
    const { summary } = retried;
    expect(summary.usage).toMatchObject({
      inputTokens: served * SPEND.usage.inputTokens,
      outputTokens: served * SPEND.usage.outputTokens,
    });
    expect(summary.costUsd).toBeCloseTo(served * REQUEST_COST, 12);
    expect(summary.byDefinition.worker?.usage.inputTokens).toBe(served * SPEND.usage.inputTokens);
    // `troupe report --html`'s totals.
    const contents = readRunDir(writer.paths.root);
    const html = renderHtmlReport(runPage(contents, buildTimeline(contents)), buildTimeline(contents));
    expect(html).toContain(
      `<b>${formatTokens(served * SPEND.usage.inputTokens)} / ${formatTokens(served * SPEND.usage.outputTokens)}</b><span>tokens in / out`,
    );
    expect(html).toContain(`<b>${formatCost(served * REQUEST_COST)}</b><span>cost`);
    // Its cards count each request and tool call once: the retry's journal starts as a copy of
    // the failed attempt's. The failed attempt called note and nap; the retry complete_task.
    const timeline = buildTimeline(contents);
    expect(timeline.agents.map((agent) => [agent.steps, agent.toolCalls])).toEqual([
      [2, 2],
      [3, 3],
    ]);
    expect(html).toContain(`<b>${served}</b><span>model requests`);
    expect(html).toContain('<b>3</b><span>tool calls');
    // The retry's row starts where its own attempt does (the Resumed it wrote after the copied
    // events, which keep the failed attempt's times) and draws only what it did itself.
    const [failedRow, retryRow] = timeline.agents;
    const retryJournal = path.join(writer.paths.journals, `${run.agentId}-r2.jsonl`);
    const resumedAt = Date.parse(
      readFileSync(retryJournal, 'utf8')
        .split('\n')
        .map((line) => (line === '' ? undefined : (JSON.parse(line) as { type: string; ts: string })))
        .find((event) => event?.type === 'Resumed')?.ts ?? '',
    );
    expect(retryRow?.start).toBe(resumedAt - timeline.origin);
    expect(retryRow?.start).not.toBe(failedRow?.start);
    expect(retryRow?.spans.filter((span) => span.kind === 'tool').map((span) => span.label)).toEqual([
      'complete_task',
    ]);
    expect(retryRow?.spans.some((span) => span.kind === 'down')).toBe(false);
    expect(retryRow?.roundStarts).toHaveLength(1);
    // Its rounds are its whole history, as its line says, with the inherited ones named.
    expect(retryRow).toMatchObject({ rounds: 2, inherited: { agentId: run.agentId, rounds: 1, steps: 2 } });
    expect(reportText(contents, timeline)).toContain('2 (1 inherited)');
    expect(html).toContain(`3 request(s) (1 and 2 inherited from ${run.agentId})`);
    // `troupe report`'s totals are summary.json's.
    const text = reportText(contents, timeline);
    expect(text).toContain(
      `tokens ${formatTokens(served * SPEND.usage.inputTokens)} in / ${formatTokens(served * SPEND.usage.outputTokens)} out`,
    );
    expect(text).toContain(`cost ${formatCost(served * REQUEST_COST)}`);

    // Had the command died before the retry's line was written, `troupe resume` takes it from the
    // retry's journal (`troupe resume --retry-failed` again): it says the same.
    const retry = new Set(['step_limit'] as const);
    const recovered = planResume(unlimited, writer.paths, lines.slice(0, 1), { retry }).recovered;
    expect(recovered).toHaveLength(1);
    expect(recovered[0]).toMatchObject({ agentId: `${run.agentId}-r2`, inherited: lines[1]?.inherited });
    expect(summarize(unlimited, [...lines.slice(0, 1), ...recovered], []).usage).toEqual(summary.usage);

    // Killed mid-retry: the retry's journal does not end and it has no line yet; summary.json is
    // an older session's. The reports' totals are those of the lines (summary.json's), the copied
    // requests once; what the retry did itself so far is said apart, not added twice.
    const killed = path.join(dir, 'killed');
    cpSync(writer.paths.root, killed, { recursive: true });
    writeFileSync(path.join(killed, 'results.jsonl'), `${JSON.stringify(lines[0])}\n`);
    const retryEvents = readFileSync(retryJournal, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
    writeFileSync(
      path.join(killed, 'journals', `${run.agentId}-r2.jsonl`),
      `${retryEvents.slice(0, -1).join('\n')}\n`,
    );
    const cut = readRunDir(killed);
    const cutTimeline = buildTimeline(cut);
    expect(cutTimeline.agents.map((agent) => [agent.agentId, agent.status])).toEqual([
      [run.agentId, 'failed'],
      [`${run.agentId}-r2`, 'interrupted'],
    ]);
    expect(cutTimeline.agents[1]?.start).toBe(resumedAt - cutTimeline.origin);
    const failedOnly = summarize(unlimited, lines.slice(0, 1), []);
    expect(failedOnly.usage.inputTokens).toBe(2 * SPEND.usage.inputTokens);
    const cutHtml = renderHtmlReport(runPage(cut, cutTimeline), cutTimeline);
    expect(cutHtml).toContain(
      `<b>${formatTokens(failedOnly.usage.inputTokens)} / ${formatTokens(failedOnly.usage.outputTokens)}</b><span>tokens in / out`,
    );
    expect(cutHtml).toContain(`<b>${formatCost(failedOnly.costUsd)}</b><span>cost`);
    expect(cutHtml).toContain('<b>2</b><span>model requests');
    expect(cutHtml).toContain('<b>2</b><span>tool calls');
    const apart = `1 model request, ${formatTokens(SPEND.usage.inputTokens)} in / ${formatTokens(SPEND.usage.outputTokens)} out, cost ${formatCost(REQUEST_COST)} so far`;
    expect(cutHtml).toContain(
      `<b>1</b><span>not in the totals</span><small>no result line yet (a session was killed): ${apart}`,
    );
    const cutText = reportText(cut, cutTimeline, 400);
    expect(cutText).toContain(
      `tokens ${formatTokens(failedOnly.usage.inputTokens)} in / ${formatTokens(failedOnly.usage.outputTokens)} out, cost ${formatCost(failedOnly.costUsd)}`,
    );
    expect(cutText).toContain(
      `not in the totals below: 1 attempt with no result line yet (a session was killed): ${apart}`,
    );
    // One rule for the counts everywhere: the entry counts by its current attempt, the killed
    // retry, which is interrupted (not the failure it retries), and the run is not complete.
    const cutSummary = runSummaryOf(cut, cutTimeline);
    expect(cutSummary.counts).toMatchObject({
      planned: 1,
      completed: 0,
      failed: 0,
      interrupted: 1,
      notRun: 0,
    });
    expect(cutSummary.complete).toBe(false);
    expect(cutSummary.failures).toEqual({});
    expect(cutHtml).toContain('<b>0</b><span>failed');
    expect(cutHtml).toContain('<b>1</b><span>interrupted');
    expect(cutText).toContain('0 of 1 completed, 0 failed, 1 interrupted');
    // A plain resume finishes the killed retry: that is what the closing text suggests.
    expect(cutText).toContain(`finish: troupe resume ${cut.paths.root}\n`);
    expect(cutText).not.toContain('--retry-failed');

    // A later session's budget starts from what the run used.
    const events: RunEvent[] = [];
    await new FanoutSession({
      plan: unlimited,
      writer,
      work: [],
      kind: 'resume',
      definitions,
      existing: readResults(writer.paths.results),
      onEvent: (event) => events.push(event),
    }).run();
    expect(events.find((event) => event.type === 'run')).toMatchObject({
      usedTokens: served * (SPEND.usage.inputTokens + SPEND.usage.outputTokens),
    });
  });
});
