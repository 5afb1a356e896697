/** What `troupe resume` and a session keep of a run's result lines: columns, not the lines. */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ResultStore } from '../../src/run-dir/result-store.ts';
import type { ResultLine } from '../../src/run-dir/results.ts';
import { RunDirWriter, readResults, readRunDirState } from '../../src/run-dir/run-dir.ts';
import type { RunPlan } from '../../src/run-dir/run-plan.ts';
import { summaryLine } from '../../src/run-dir/summary.ts';
import { tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-result-store-'));
});
afterEach(() => cleanup());

const USAGE = { inputTokens: 100, outputTokens: 10, cachedInputTokens: 5, reasoningTokens: 2 };

function completed(index: number | null, agentId: string, extra: Partial<ResultLine> = {}): ResultLine {
  return {
    index,
    agentId,
    parentId: null,
    agent: 'worker',
    attempt: 1,
    status: 'completed',
    result: { summary: `ANSWER-${agentId}` },
    answer: `ANSWER-${agentId}`,
    metadata: { secretish: `META-${agentId}` },
    usage: USAGE,
    costUsd: 0.25,
    rounds: 2,
    steps: 3,
    hostId: 0,
    restarts: 0,
    startedAt: '2026-01-01T00:00:00.000Z',
    endedAt: '2026-01-01T00:00:01.500Z',
    ...extra,
  };
}

const LINES: ResultLine[] = [
  completed(0, 'p-0', { scores: { exact: { score: 1, pass: true, detail: 'same' } } }),
  {
    ...completed(1, 'p-1'),
    status: 'failed',
    reason: 'cancelled',
    error: { name: 'UserError', code: 'cancelled', message: 'ERROR-TEXT', fields: {} },
    costUsd: null,
    startedAt: null,
    scores: { exact: { score: 0, pass: false, error: 'the agent failed' } },
  },
  completed(null, 'child-x', { parentId: 'p-0', agent: 'helper', steps: undefined }),
  completed(1, 'p-1-r2', {
    attempt: 2,
    inherited: { usage: USAGE, costUsd: null },
    usage: { ...USAGE, estimated: true, estimatedSide: 'output' },
    replay: { recorded: 3, live: 1, refused: 0 },
    scores: { exact: { score: 1, pass: true } },
  }),
  // An agent id a plan entry's would not be, and times toISOString would not write.
  completed(2, 'custom-id', { startedAt: '2026-01-01T00:00:00Z', endedAt: 'not a time' }),
];

describe('ResultStore', () => {
  it('gives back what the summary needs of every line, but the scores of a superseded attempt', () => {
    const store = new ResultStore('p', LINES);
    expect(store.size).toBe(LINES.length);
    const expected = LINES.map(summaryLine).map((line, row) =>
      row === 1 ? (({ scores: _scores, ...rest }) => rest)(line) : line,
    );
    expect([...store]).toEqual(expected);
    // Iterated again, the same.
    expect([...store]).toEqual(expected);
    expect([...store.resumeLines()]).toEqual(
      LINES.map(({ index, agentId, attempt, status, reason }) => ({
        index,
        agentId,
        attempt,
        status,
        ...(reason === undefined ? {} : { reason }),
      })),
    );
  });

  it('grows past its first columns', () => {
    const many = Array.from({ length: 2500 }, (_, index) => completed(index, `p-${index}`));
    const store = new ResultStore('p', many);
    expect([...store].map((line) => line.agentId)).toEqual(many.map((line) => line.agentId));
  });
});

function writtenRunDir(lines: readonly ResultLine[], tail = ''): string {
  const plan = {
    format: 1,
    runId: 'r',
    idPrefix: 'p',
    createdAt: '2026-01-01T00:00:00.000Z',
    planFile: null,
    cwd: dir,
    provider: { name: 'simulated', config: { kind: 'simulated' }, simulated: true, source: 'default' },
    threads: 1,
    isolation: 'shared',
    concurrency: 1,
    agentFiles: [],
    toolModules: [],
    runs: [0, 1, 2].map((index) => ({
      index,
      agentId: `p-${index}`,
      agent: 'worker',
      task: 't',
      context: [],
      metadata: {},
      source: { file: 'plan.yaml', line: 1, column: 1 },
    })),
  } satisfies RunPlan;
  const root = path.join(dir, 'run');
  RunDirWriter.create(root, plan);
  writeFileSync(
    path.join(root, 'results.jsonl'),
    `${lines.map((line) => JSON.stringify(line)).join('\n')}\n${tail}`,
  );
  return root;
}

/** Every string reachable from `value`, through objects, arrays, Maps and Sets. */
function strings(value: unknown, seen = new Set<unknown>()): string[] {
  if (typeof value === 'string') return [value];
  if (typeof value !== 'object' || value === null || seen.has(value)) return [];
  seen.add(value);
  const parts =
    value instanceof Map
      ? [...value.keys(), ...value.values()]
      : value instanceof Set
        ? [...value]
        : Object.values(value);
  return parts.flatMap((part) => strings(part, seen));
}

describe('reading a run directory for troupe resume', () => {
  it('holds no answer, result, error or metadata of any line', () => {
    const root = writtenRunDir(LINES);
    const state = readRunDirState(root);
    expect([...state.results].map((line) => line.agentId)).toEqual(LINES.map((line) => line.agentId));
    const held = strings(state).join('\n');
    expect(held).not.toContain('ANSWER-');
    expect(held).not.toContain('META-');
    expect(held).not.toContain('ERROR-TEXT');
  });
});

describe('readResults', () => {
  it('hands over each line as it is read, skips a line over the bound and leaves out a torn last line', () => {
    const root = writtenRunDir([], '');
    const file = path.join(root, 'results.jsonl');
    const long = completed(1, 'p-1', { answer: 'x'.repeat(2000) });
    writeFileSync(
      file,
      [completed(0, 'p-0'), long, completed(2, 'p-2')].map((l) => JSON.stringify(l)).join('\n'),
    );
    appendFileSync(file, '\n{"index":3,"agentId":"p-');
    const seen: string[] = [];
    const read = readResults(file, (line) => seen.push(line.agentId), 1000);
    expect(seen).toEqual(['p-0', 'p-2']);
    expect(read.tornTail).toBe(true);
    expect(read.problems).toEqual([{ line: 2, message: expect.stringContaining('longer than 1000 bytes') }]);
  });

  it('reopening cuts a torn last line longer than the chunk it reads the end of the file by', () => {
    const root = writtenRunDir(
      [completed(0, 'p-0', { answer: 'y'.repeat(200_000) })],
      `{"index":1,"answer":"${'z'.repeat(100_000)}`,
    );
    RunDirWriter.reopen(root);
    const text = readFileSync(path.join(root, 'results.jsonl'), 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(text.split('\n')).toHaveLength(2);
    expect(readRunDirState(root).tornTail).toBe(false);
  });
});
