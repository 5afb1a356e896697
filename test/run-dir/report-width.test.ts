import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentOutcome } from '../../src/loop/types.ts';
import { approvalsReportText } from '../../src/run-dir/approvals.ts';
import { closingText } from '../../src/run-dir/execute.ts';
import { excerpt, table } from '../../src/run-dir/format.ts';
import { reportText } from '../../src/run-dir/report-text.ts';
import { resultLine } from '../../src/run-dir/results.ts';
import { RunDirWriter, readRunDir } from '../../src/run-dir/run-dir.ts';
import type { RunPlan } from '../../src/run-dir/run-plan.ts';
import { summarize } from '../../src/run-dir/summary.ts';
import { displayWidth, fitWidth } from '../../src/run-dir/text-width.ts';
import { buildTimeline } from '../../src/run-dir/timeline.ts';
import { tempDir } from './helpers.ts';

/** Answers a model may give: CJK, emoji (one a ZWJ family), an accent made of a combining mark. */
const ANSWERS = [
  '漢字の答えです。'.repeat(8),
  '🎉🚀'.repeat(30),
  'family 👨‍👩‍👧 '.repeat(10),
  `cafe\u0301 `.repeat(20),
];

/** A lone surrogate: half an emoji, which a terminal shows as `�`. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

let dir: string;
let cleanup: () => void;
let runDir: string;

function runPlan(): RunPlan {
  return {
    format: 1,
    runId: '20250101-000000-abcdef',
    name: 'a review of every file under examples/ by eight workers and an orchestrator',
    idPrefix: 'abcdef',
    createdAt: '2025-01-01T00:00:00.000Z',
    planFile: null,
    cwd: dir,
    provider: { name: 'simulated', config: { kind: 'simulated' }, simulated: true, source: 'default' },
    threads: 1,
    isolation: 'shared',
    concurrency: 2,
    agentFiles: [],
    toolModules: [],
    runs: ANSWERS.map((_, index) => ({
      index,
      agentId: `abcdef-${index}`,
      agent: 'worker',
      task: `task ${index}`,
      context: [],
      metadata: {},
      source: { file: 'plan.yaml', line: index + 1, column: 1 },
    })),
  };
}

beforeAll(() => {
  ({ dir, cleanup } = tempDir('troupe-report-width-'));
  runDir = path.join(dir, 'run');
  const writer = RunDirWriter.create(runDir, runPlan());
  ANSWERS.forEach((answer, index) => {
    const outcome = {
      agentId: `abcdef-${index}`,
      status: 'completed',
      answer,
      result: { summary: answer },
      usage: { inputTokens: 100, outputTokens: 10, cachedInputTokens: 0, reasoningTokens: 0 },
      costUsd: 0.01,
      rounds: 1,
    } as AgentOutcome;
    writer.append(
      resultLine(outcome, {
        index,
        parentId: undefined,
        agent: 'worker',
        attempt: 1,
        label: undefined,
        hostId: 0,
        restarts: 0,
        startedAt: '2025-01-01T00:00:01.000Z',
        endedAt: '2025-01-01T00:00:03.000Z',
      }),
    );
  });
  writer.flush();
});
afterAll(() => cleanup());

describe('the timeline of a run with a long events.jsonl', () => {
  it('takes its range from 250,000 run events without overflowing the stack', () => {
    // Math.min(...times) put every time on the stack as an argument: RangeError past ~150,000.
    const contents = readRunDir(runDir);
    const start = Date.parse('2025-01-01T00:00:00.000Z');
    const events = Array.from({ length: 250_000 }, (_, i) => ({
      ts: new Date(start + i).toISOString(),
      type: 'session' as const,
      event: i % 2 === 0 ? ('started' as const) : ('ended' as const),
      kind: 'resume' as const,
    }));
    const timeline = buildTimeline({ ...contents, events });
    expect(timeline.origin).toBe(start);
    expect(timeline.duration).toBe(249_999);
    expect(timeline.agents).toHaveLength(ANSWERS.length);
  });
});

describe('report lines measured in terminal columns', () => {
  it.each([20, 40, 80, 120])('every line of the report fits %i columns, header included', (columns) => {
    const contents = readRunDir(runDir);
    const text = reportText(contents, buildTimeline(contents), columns, false);
    const lines = text.split('\n');
    expect(lines.filter((line) => displayWidth(line) > columns - 1)).toEqual([]);
    expect(text).not.toMatch(LONE_SURROGATE);
    // Wide rows are cut, not wrapped: one line per agent.
    expect(lines.filter((line) => /^\d /.test(line))).toHaveLength(ANSWERS.length);
  });

  it('the header is broken at spaces rather than cut, so nothing of it is lost', () => {
    const contents = readRunDir(runDir);
    const text = reportText(contents, buildTimeline(contents), 60, false);
    const header = text.slice(0, text.indexOf('\n\n')).replace(/\n\s*/g, ' ');
    expect(header).toContain('by eight workers and an orchestrator): provider simulated');
    expect(header).toContain('[simulated model]');
    expect(text.split('\n')[text.split('\n').findIndex((line) => line.startsWith('#')) - 1]).toBe('');
  });

  it("the closing summary's notices fit the width; the run dir and commands stay whole", () => {
    const summary = summarize(runPlan(), readRunDir(runDir).results, []);
    const long = `${dir}/${'deep/'.repeat(20)}run`;
    const lines = closingText(summary, long, [], 'default', 59).split('\n');
    const prose = lines.filter((line) => !line.includes(long));
    expect(prose.filter((line) => displayWidth(line) > 59)).toEqual([]);
    expect(lines).toContain(`run dir: ${long}`);
    expect(lines.some((line) => line.startsWith('troupe: '))).toBe(true);
  });

  it('approval rows fit the width with CJK arguments', () => {
    const lines = approvalsReportText(
      [
        {
          agentId: 'abcdef-0',
          agent: 'worker',
          index: 0,
          requestId: 'q1',
          callId: 'c1',
          tool: 'run_terminal_cmd',
          rule: 'run_terminal_cmd',
          args: { command: `echo ${'漢字'.repeat(40)}` },
          asked: 'asks before running',
          approved: false,
          by: 'person',
          reason: 'no',
          requestedAt: '2025-01-01T00:00:01.000Z',
          decidedAt: '2025-01-01T00:00:02.000Z',
        },
      ],
      119,
    );
    expect(lines.filter((line) => displayWidth(line) > 119)).toEqual([]);
  });

  it('tables pad by columns, so wide cells keep the columns after them aligned', () => {
    const [, wide = '', narrow = ''] = table([
      ['NAME', 'STATUS'],
      ['漢字', 'ok'],
      ['ab', 'ok'],
    ]);
    expect(displayWidth(wide.slice(0, wide.indexOf('ok')))).toBe(narrow.indexOf('ok'));
  });

  it('excerpts are cut by columns and never inside a surrogate pair or a grapheme', () => {
    expect(displayWidth(excerpt('漢字'.repeat(20), 11))).toBeLessThanOrEqual(11);
    expect(excerpt('🎉'.repeat(20), 10)).toBe(`${'🎉'.repeat(4)}…`);
    expect(excerpt(`${'a'.repeat(8)}e\u0301tude`, 10)).toBe(`${'a'.repeat(8)}e\u0301…`);
    expect(fitWidth('ab👨‍👩‍👧cd', 4)).toBe('ab…');
    expect(displayWidth('👨‍👩‍👧')).toBe(2);
  });
});
