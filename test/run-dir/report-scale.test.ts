/**
 * The reports of a large killed run read no more than they show: a killed 5,000-agent run left
 * thousands of attempts with a journal and no result line, and the terminal report rebuilt every
 * one's transcript for its RESULT column.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { chooseProvider } from '../../src/run-dir/provider-choice.ts';
import { REPORT_ROWS_PER_CHUNK, reportText } from '../../src/run-dir/report-text.ts';
import { REPORT_RESULT_CHARS } from '../../src/run-dir/results.ts';
import { RunDirWriter, readRunDir, readRunDirForReport } from '../../src/run-dir/run-dir.ts';
import { agentIdFor, resolveRunPlan } from '../../src/run-dir/run-plan.ts';
import { FanoutSession } from '../../src/run-dir/session.ts';
import { buildTimeline, type Timeline } from '../../src/run-dir/timeline.ts';
import { captureIO, tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
let root: string;
/** results.jsonl as the run wrote it. */
let lines: string;
const ENTRIES = 3;

beforeAll(async () => {
  ({ dir, cleanup } = tempDir('troupe-report-scale-'));
  writeFileSync(path.join(dir, 'a.md'), '# A\nAlpha.\n');
  writeFileSync(
    path.join(dir, 'plan.yaml'),
    [
      'cwd: .',
      'threads: 1',
      'agent: worker',
      'runs:',
      ...Array.from({ length: ENTRIES }, (_, i) => `  - task: Review a.md, item ${i}.`),
      '',
    ].join('\n'),
  );
  const { plan, definitions } = await loadPlan(path.join(dir, 'plan.yaml'));
  const runPlan = resolveRunPlan(plan, chooseProvider({ env: {} }), {}, 'simulated');
  root = path.join(dir, 'run');
  const writer = RunDirWriter.create(root, runPlan);
  const work = runPlan.runs.map((run) => ({ run, agentId: run.agentId, attempt: 1, resume: false }));
  await new FanoutSession({ plan: runPlan, writer, work, kind: 'fanout', definitions }).run();
  lines = readFileSync(path.join(root, 'results.jsonl'), 'utf8');
  // What a kill between an agent's outcome and its result line leaves: journals that end, no lines.
  writeFileSync(path.join(root, 'results.jsonl'), '');
});
afterAll(() => cleanup());

describe('the terminal report of a killed run', () => {
  it("shows a lineless agent's outcome without building its transcript", () => {
    const timeline = buildTimeline(readRunDir(root));
    const agent = timeline.agents[1];
    if (agent === undefined) throw new Error('no agent');
    expect(agent.result).toBeUndefined();
    expect(agent.status).toBe('completed');
    // Its journal gone once the timeline is built: the report would find no transcript to build.
    rmSync(path.join(root, 'journals', `${agent.agentId}.jsonl`));
    const row = reportText(readRunDir(root), timeline, 400)
      .split('\n')
      .find((line) => line.includes(agent.agentId));
    expect(row).toContain('[simulated] Task: Review a.md, item 1.');
  });
});

describe('the timeline of a run with a killed retry', () => {
  it("reads only the first line of a retry's journal to tell it started: one that cannot be read is left out, not the report", () => {
    const copy = path.join(dir, 'run-retry');
    cpSync(root, copy, { recursive: true });
    writeFileSync(path.join(copy, 'results.jsonl'), lines);
    const contents = readRunDir(copy);
    const retry = agentIdFor(contents.plan.idPrefix, 0, 2);
    // A journal no read of the whole file gets through (EISDIR), where a retry's would be.
    mkdirSync(path.join(copy, 'journals', `${retry}.jsonl`));
    const timeline = buildTimeline(contents);
    expect(timeline.agents.map((agent) => agent.agentId)).not.toContain(retry);
    expect(timeline.agents).toHaveLength(ENTRIES);
  });
});

describe('the report of a run with long results', () => {
  it('keeps of each long result the start of what its row shows, and shows the same rows', () => {
    const copy = path.join(dir, 'run-long');
    cpSync(root, copy, { recursive: true });
    const long = 'word '.repeat(2000);
    const edited = lines
      .trimEnd()
      .split('\n')
      .map((text) => {
        const line = JSON.parse(text) as Record<string, unknown>;
        const result = { summary: `${line.index} ${long}`, files: ['x'.repeat(5000)] };
        return JSON.stringify({ ...line, result, answer: JSON.stringify(result) });
      });
    writeFileSync(path.join(copy, 'results.jsonl'), `${edited.join('\n')}\n`);
    const slim = readRunDirForReport(copy);
    expect(slim.results).toHaveLength(ENTRIES);
    for (const line of slim.results) {
      expect(line.answer).toBeUndefined();
      expect(line.result).toBe(`${line.index} ${long}`.slice(0, REPORT_RESULT_CHARS));
      expect(line.usage.inputTokens).toBeGreaterThan(0);
    }
    const rows = (contents: ReturnType<typeof readRunDir>): string[] =>
      reportText(contents, buildTimeline(contents), 400)
        .split('\n')
        .filter((row) => row.includes(contents.plan.idPrefix));
    const whole = readRunDir(copy);
    expect(rows(slim)).toEqual(rows(whole));
    expect(rows(slim).join('\n')).toContain('2 word word');
  });
});

describe('the terminal report of a large run', () => {
  it("keeps no agent's spans, markers or round starts: only the HTML timeline draws them", () => {
    const copy = path.join(dir, 'run-spans');
    cpSync(root, copy, { recursive: true });
    writeFileSync(path.join(copy, 'results.jsonl'), lines);
    const contents = readRunDir(copy);
    const drawn = buildTimeline(contents);
    expect(drawn.agents.some((agent) => agent.spans.length > 0 && agent.roundStarts.length > 0)).toBe(true);
    const bare = buildTimeline(contents, { spans: false });
    expect(bare.agents).toHaveLength(drawn.agents.length);
    for (const agent of bare.agents) {
      expect(agent.spans).toHaveLength(0);
      expect(agent.markers).toHaveLength(0);
      expect(agent.roundStarts).toHaveLength(0);
    }
    // The table is the same without them.
    expect(reportText(contents, bare, 400)).toBe(reportText(contents, drawn, 400));
  });

  it('keeps spans, markers and round starts for the first agents of the HTML timeline only', () => {
    const copy = path.join(dir, 'run-drawn');
    cpSync(root, copy, { recursive: true });
    writeFileSync(path.join(copy, 'results.jsonl'), lines);
    const contents = readRunDir(copy);
    const every = buildTimeline(contents);
    const first = buildTimeline(contents, { spans: 2 });
    const drawn = (agents: Timeline['agents']) => agents.map((agent) => agent.spans.length > 0);
    expect(drawn(every.agents).slice(0, 2)).toContain(true);
    expect(drawn(every.agents).slice(2)).toContain(true);
    expect(first.agents.map((agent) => agent.agentId)).toEqual(every.agents.map((agent) => agent.agentId));
    first.agents.forEach((agent, index) => {
      const all = every.agents[index];
      // The same spans as a timeline with every agent's, on the same clock.
      if (index < 2) {
        expect(agent.spans).toEqual(all?.spans);
        expect(agent.markers).toEqual(all?.markers);
        expect(agent.roundStarts).toEqual(all?.roundStarts);
      } else {
        expect(agent.spans).toHaveLength(0);
        expect(agent.roundStarts).toHaveLength(0);
      }
      expect(agent.start).toBe(all?.start);
      expect(agent.end).toBe(all?.end);
    });
  });

  it('is written a chunk of whole lines at a time, not held as one string', async () => {
    const copy = path.join(dir, 'run-many');
    cpSync(root, copy, { recursive: true });
    // The three lines, then as many again as fill three chunks of rows (lines without a plan entry).
    const first = JSON.parse(lines.trimEnd().split('\n')[0] ?? '') as Record<string, unknown>;
    const prefix = readRunDir(copy).plan.idPrefix;
    const more = Array.from({ length: 3 * REPORT_ROWS_PER_CHUNK }, (_, i) =>
      JSON.stringify({ ...first, index: null, agentId: `${prefix}-x${i}`, label: `x${i}` }),
    );
    writeFileSync(path.join(copy, 'results.jsonl'), `${lines}${more.join('\n')}\n`);
    const io = captureIO();
    const chunks: string[] = [];
    const write = io.stdout;
    expect(
      await main(['report', copy], {
        ...io,
        stdout: (text) => {
          chunks.push(text);
          write(text);
        },
      }),
      io.err(),
    ).toBe(0);
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) {
      expect(chunk.endsWith('\n')).toBe(true);
      expect(chunk.split('\n').length).toBeLessThanOrEqual(REPORT_ROWS_PER_CHUNK + 20);
    }
    const text = io.out();
    expect(text.split('\n').filter((row) => row.includes(`${prefix}-x`))).toHaveLength(
      3 * REPORT_ROWS_PER_CHUNK,
    );
    expect(text).toContain('finished:');
  });
});
