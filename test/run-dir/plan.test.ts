import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { formatPlanProblem, type PlanProblem, planProblemsOf } from '../../src/run-dir/plan-problems.ts';
import { planInputsOf } from '../../src/run-dir/task-rows.ts';
import { tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;

beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-plan-'));
});
afterEach(() => cleanup());

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

async function problemsOf(file: string): Promise<string[]> {
  let problems: readonly PlanProblem[] | undefined;
  try {
    await loadPlan(file, { cwd: dir });
  } catch (error) {
    problems = planProblemsOf(error);
    if (!problems) throw error;
  }
  if (!problems) throw new Error('expected the plan to be refused');
  return problems.map((problem) => formatPlanProblem(problem, dir));
}

const AGENT_FILE = `---
name: grader
description: Grades one document.
---
Grade it.
`;

describe('loadPlan', () => {
  it('resolves runs with their defaults, and paths relative to the plan file', async () => {
    write('plans/agents/grader.md', AGENT_FILE);
    write('plans/tool.ts', 'export const tool = {};');
    const file = write(
      'plans/plan.yaml',
      [
        'name: review',
        'provider: simulated',
        'providerOptions: { latency: 5 }',
        'model: small',
        'threads: 3',
        'isolation: thread',
        'concurrency: 2',
        'cwd: ..',
        'agents: agents',
        'toolModules: [{ module: tool.ts, export: tool }]',
        'limits: { maxSteps: 4, maxCostUsd: 0.5 }',
        'agent: worker',
        'runs:',
        '  - task: Review a.md',
        '  - agent: grader',
        '    task: Grade b.md',
        '    context: [first, second]',
        '    metadata: { split: test }',
        '    id: 17',
      ].join('\n'),
    );
    const { plan, definitions } = await loadPlan(file, { cwd: '/elsewhere' });
    expect(definitions.map((d) => d.name)).toEqual(['grader']);
    expect(plan).toMatchObject({
      name: 'review',
      provider: 'simulated',
      providerOptions: { latency: 5 },
      model: 'small',
      threads: 3,
      isolation: 'thread',
      concurrency: 2,
      cwd: dir,
      agentFiles: [path.join(dir, 'plans/agents/grader.md')],
      toolModules: [{ module: path.join(dir, 'plans/tool.ts'), export: 'tool' }],
      limits: { maxSteps: 4, maxCostUsd: 0.5 },
    });
    expect(plan.runs).toEqual([
      {
        index: 0,
        agent: 'worker',
        task: 'Review a.md',
        context: [],
        metadata: {},
        source: { file, line: 14, column: 5 },
      },
      {
        index: 1,
        agent: 'grader',
        task: 'Grade b.md',
        context: ['first', 'second'],
        metadata: { split: 'test' },
        label: '17',
        source: { file, line: 15, column: 5 },
      },
    ]);
  });

  it('reads one run per line of a tasks JSONL file, skipping blank lines', async () => {
    write(
      'data/tasks.jsonl',
      '{"task": "one", "id": "a"}\n\n{"task": "two", "context": "rubric", "metadata": {"k": 1}}\n',
    );
    const file = write('plan.yaml', 'agent: worker\ntasks: data/tasks.jsonl\n');
    const { plan } = await loadPlan(file, { cwd: dir });
    expect(plan.cwd).toBe(dir);
    expect(
      plan.runs.map((run) => {
        const { task, context, metadata } = planInputsOf(plan, run);
        return {
          index: run.index,
          agent: run.agent,
          task,
          context,
          metadata,
          label: run.label,
          line: run.source.line,
        };
      }),
    ).toEqual([
      { index: 0, agent: 'worker', task: 'one', context: [], metadata: {}, label: 'a', line: 1 },
      {
        index: 1,
        agent: 'worker',
        task: 'two',
        context: ['rubric'],
        metadata: { k: 1 },
        label: undefined,
        line: 3,
      },
    ]);
  });

  it('reads a tasks file saved "UTF-8 with BOM" with CRLF line ends like any other', async () => {
    // Excel, Notepad and PowerShell's Out-File write a byte order mark before the first line.
    write('tasks.jsonl', '\uFEFF{"task": "one", "id": "a"}\r\n{"task": "two", "id": "b"}\r\n');
    const file = write('plan.yaml', 'agent: worker\ntasks: tasks.jsonl\n');
    const { plan } = await loadPlan(file, { cwd: dir });
    expect(plan.runs.map((run) => ({ task: planInputsOf(plan, run).task, label: run.label }))).toEqual([
      { task: 'one', label: 'a' },
      { task: 'two', label: 'b' },
    ]);
  });

  it('reports every problem at once as file:line:column: field: expected X, got Y', async () => {
    const file = write(
      'plan.yaml',
      [
        'threads: two',
        'concurency: 3',
        'runs:',
        '  - agent: worker',
        '    task: 3',
        '  - task: hi',
        '    extra: 1',
        '    "task.id": 2',
      ].join('\n'),
    );
    expect(await problemsOf(file)).toEqual([
      'plan.yaml:1:10: threads: expected a positive integer, got `"two"` (string)',
      expect.stringMatching(
        /^plan\.yaml:2:1: concurency: expected one of the plan keys \(.*\), got `"concurency"` \(string\) \(did you mean `concurrency`\?\)$/,
      ),
      'plan.yaml:5:11: runs[0].task: expected a non-empty string, got `3` (number)',
      'plan.yaml:6:5: runs[1].agent: expected an agent name (here or as the plan `agent`), got nothing',
      'plan.yaml:7:5: runs[1].extra: expected one of agent, task, context, metadata, id, expected, modelSettings, got `"extra"` (string)',
      // A key that is not an identifier is quoted: `runs[1].task.id` would name a member of `task`.
      'plan.yaml:8:5: runs[1]["task.id"]: expected one of agent, task, context, metadata, id, expected, modelSettings, got `"task.id"` (string)',
    ]);
  });

  it('reports unknown agent names where they are written', async () => {
    const file = write(
      'plan.yaml',
      ['runs:', '  - agent: nobody', '    task: a', '  - agent: worker', '    task: b'].join('\n'),
    );
    expect(await problemsOf(file)).toEqual([
      expect.stringMatching(
        /^plan\.yaml:2:12: runs\[0\]\.agent: expected the name of an available agent \(.*worker.*\), got `"nobody"` \(string\)$/,
      ),
    ]);
  });

  it('reports bad tasks lines with the tasks file and its own line numbers', async () => {
    write('tasks.jsonl', '{"task": "ok"}\n\n{"task": 3, "x": 1}\nnot json\n[1]\n');
    const file = write('plan.yaml', 'agent: ghost\ntasks: tasks.jsonl\n');
    expect(await problemsOf(file)).toEqual([
      expect.stringMatching(
        /^plan\.yaml:1:8: agent: expected the name of an available agent .*, got `"ghost"` \(string\)$/,
      ),
      'tasks.jsonl:3:2: task: expected a non-empty string, got `3` (number)',
      'tasks.jsonl:3:13: x: expected one of task, context, metadata, id, expected, modelSettings, got `"x"` (string)',
      expect.stringMatching(/^tasks\.jsonl:4:1: line 4: expected a JSON object, got invalid JSON \(.*\)$/),
      'tasks.jsonl:5:1: line 5: expected a JSON object, got `[1]` (array)',
    ]);
  });

  it('says a tasks file that is not JSONL at all (a CSV) is not, once', async () => {
    write('tasks.csv', 'task,expected\n"What is 2+2?",4\n"Capital of France?",Paris\n');
    const file = write('plan.yaml', 'agent: worker\ntasks: tasks.csv\n');
    expect(await problemsOf(file)).toEqual([
      expect.stringMatching(
        /^tasks\.csv:1:1: line 1: expected a JSONL tasks file \(one JSON object per line, like \{"task": "\.\.\."\}\), got "task,expected", which is not JSON \(.*\)$/,
      ),
    ]);
  });

  it('refuses a plan with both runs and tasks, or with neither', async () => {
    write('tasks.jsonl', '{"task": "a"}\n');
    const both = write('both.yaml', 'agent: worker\ntasks: tasks.jsonl\nruns:\n  - task: b\n');
    expect(await problemsOf(both)).toEqual([
      'both.yaml:2:8: tasks: expected either `runs` or `tasks`, got both',
    ]);
    const neither = write('neither.yaml', 'agent: worker\n');
    expect(await problemsOf(neither)).toEqual([
      'neither.yaml:1:1: runs: expected a non-empty list of runs (or `agent` and `tasks`), got nothing',
    ]);
  });

  it('reports a YAML syntax error with its position and paths that do not exist', async () => {
    // The parser reports an unclosed bracket or quote where the file ends; the problem points at
    // where it opens.
    expect(await problemsOf(write('broken.yaml', 'runs:\n  - task: [unclosed\n'))).toEqual([
      expect.stringMatching(/^broken\.yaml:2:11: \(yaml\): .*\(it opens here and is never closed\)$/),
    ]);
    // Mid-file, the parser reports it at the next key: still located where it opens.
    expect(
      await problemsOf(write('mid.yaml', 'name: [unclosed\nagent: worker\nruns:\n  - task: a\n')),
    ).toEqual([expect.stringMatching(/^mid\.yaml:1:7: \(yaml\): .*\(it opens here and is never closed\)$/)]);
    expect(
      await problemsOf(write('quote.yaml', 'runs:\n  - task: "unterminated\n    agent: worker\n')),
    ).toEqual(['quote.yaml:2:11: (yaml): Missing closing "quote (it opens here and is never closed)']);
    expect(
      await problemsOf(write('single.yaml', "runs:\n  - task: 'it''s fine'\n    agent: 'worker\n")),
    ).toEqual(["single.yaml:3:12: (yaml): Missing closing 'quote (it opens here and is never closed)"]);
    const missing = write(
      'missing.yaml',
      'cwd: nowhere\ntoolModules: [gone.ts]\nagent: worker\ntasks: none.jsonl\n',
    );
    expect(await problemsOf(missing)).toEqual([
      expect.stringMatching(
        /^missing\.yaml:1:6: cwd: expected an existing directory \(.*\), got `"nowhere"` \(string\)$/,
      ),
      'missing.yaml:2:15: toolModules[0]: expected an existing module file, got `"gone.ts"` (string)',
      expect.stringMatching(
        /^missing\.yaml:4:8: tasks: expected a readable JSONL file \(.*\), got `"none.jsonl"` \(string\)$/,
      ),
    ]);
  });

  it('reports an alias bomb as a plan problem at the first alias, never as an internal error', async () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x]',
      ...'bcdefgh'.split('').map((k, i) => `${k}: &${k} [${`*${'abcdefgh'[i]}, `.repeat(9).slice(0, -2)}]`),
      'runs:',
      '  - agent: worker',
      '    task: t',
    ].join('\n');
    expect(await problemsOf(write('bomb.yaml', bomb))).toEqual([
      expect.stringMatching(/^bomb\.yaml:2:8: \(yaml\): .*expected at most 100 alias expansions/),
    ]);
  });

  it('reports flow collections nested absurdly deep as a plan problem', async () => {
    const deep = `runs: ${'['.repeat(5000)}${']'.repeat(5000)}\n`;
    expect(await problemsOf(write('deep.yaml', deep))).toEqual([
      expect.stringMatching(/^deep\.yaml:1:\d+: \(yaml\): .*nested at most 64 levels deep/),
    ]);
  });

  it('fails with plan_not_found for a file that does not exist', async () => {
    const absent = path.join(dir, 'absent.yaml');
    // Said in words, not as `could not read it: Error: ENOENT: no such file or directory, open ...`.
    await expect(loadPlan(absent)).rejects.toMatchObject({
      code: 'plan_not_found',
      message: `Expected a plan file, could not read ${absent}: no such file or directory`,
    });
    await expect(loadPlan(dir)).rejects.toMatchObject({
      code: 'plan_not_found',
      message: `Expected a plan file, could not read ${dir}: it is a directory`,
    });
  });
});

describe('model aliases and MCP servers in plans', () => {
  it('reads modelMap and mcpServers, and reports what is wrong in them with line and column', async () => {
    const good = write(
      'good.yaml',
      [
        'agent: worker',
        'runs: [{ task: one }]',
        'modelMap: { sonnet: claude-sonnet-4-5, "openai:haiku": gpt-5-nano }',
        'mcpServers:',
        '  docs: { type: http, url: "https://docs.example.com/mcp" }',
        '  local: { command: node, args: [server.js] }',
      ].join('\n'),
    );
    const { plan } = await loadPlan(good, { cwd: dir });
    expect(plan.modelMap).toEqual({ sonnet: 'claude-sonnet-4-5', 'openai:haiku': 'gpt-5-nano' });
    expect(plan.mcpServers).toEqual({
      docs: { type: 'http', url: 'https://docs.example.com/mcp', headers: {} },
      local: { type: 'stdio', command: 'node', args: ['server.js'], env: {} },
    });

    const bad = write(
      'bad.yaml',
      [
        'runs: [{ agent: worker, task: one }]',
        'modelMap: { sonnet: 3 }',
        'mcpServers:',
        '  broken: { comand: node }',
      ].join('\n'),
    );
    const problems = await problemsOf(bad);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^bad\.yaml:2:21: modelMap\.sonnet: expected a model id, got `3`/);
    expect(problems[1]).toMatch(/^bad\.yaml:4:\d+: mcpServers\.broken\.comand: Unknown key `comand`/);
  });

  it('reads modelSettings of the plan, of a run and of a task line, and locates what is wrong in them', async () => {
    write(
      'tasks.jsonl',
      '{"task": "one", "modelSettings": {"seed": 7}}\n{"task": "two", "modelSettings": {"topP": 0}}\n',
    );
    const good = write(
      'good.yaml',
      [
        'agent: worker',
        'modelSettings: { temperature: 0.3, reasoningEffort: low }',
        'runs: [{ task: one, modelSettings: { maxOutputTokens: 64 } }]',
      ].join('\n'),
    );
    const { plan } = await loadPlan(good, { cwd: dir });
    expect(plan.modelSettings).toEqual({ temperature: 0.3, reasoningEffort: 'low' });
    expect(plan.runs[0]?.modelSettings).toEqual({ maxOutputTokens: 64 });

    const bad = write(
      'bad.yaml',
      [
        'agent: worker',
        'modelSettings: { top_p: 0.3, reasoningEffort: huge }',
        'runs: [{ task: one, modelSettings: { maxOutputTokens: -1 } }]',
      ].join('\n'),
    );
    const problems = await problemsOf(bad);
    expect(problems).toEqual([
      expect.stringMatching(
        /^bad\.yaml:2:18: modelSettings\.top_p: Unknown model setting `top_p` \(did you mean `topP`\?\)/,
      ),
      expect.stringMatching(
        /^bad\.yaml:2:47: modelSettings\.reasoningEffort: Expected `reasoningEffort` to be /,
      ),
      expect.stringMatching(
        /^bad\.yaml:3:55: runs\[0\]\.modelSettings\.maxOutputTokens: Expected `maxOutputTokens` to be /,
      ),
    ]);

    const tasks = write('tasks.yaml', 'agent: worker\ntasks: tasks.jsonl\n');
    expect(await problemsOf(tasks)).toEqual([
      expect.stringMatching(/^tasks\.jsonl:2:\d+: modelSettings\.topP: Expected `topP` to be /),
    ]);
  });
});

describe('a misspelt plan key', () => {
  it('names the nearest known key, at the top level, in a run entry, in a tasks line and in permissions', async () => {
    write('tasks.jsonl', '{"task": "one", "contex": []}\n');
    const bad = write(
      'bad.yaml',
      [
        'agent: worker',
        'run:',
        '  - task: x',
        'tasks: tasks.jsonl',
        'limit: { maxSteps: 3 }',
        'permissions: { alow: [] }',
      ].join('\n'),
    );
    const problems = await problemsOf(bad);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^bad\.yaml:2:1: run: expected one of the plan keys \(.*\), got `"run"` \(string\) \(did you mean `runs`\?\)$/,
        ),
        expect.stringMatching(/: limit: .*got `"limit"` \(string\) \(did you mean `limits`\?\)$/),
        expect.stringMatching(/alow.*\(did you mean `allow`\?\)$/),
        expect.stringMatching(/^tasks\.jsonl:1:17: contex: .*\(did you mean `context`\?\)$/),
      ]),
    );
    const entry = write('entry.yaml', ['agent: worker', 'runs:', '  - { task: x, agnt: worker }'].join('\n'));
    expect(await problemsOf(entry)).toEqual([
      expect.stringMatching(/runs\[0\]\.agnt: .*got `"agnt"` \(string\) \(did you mean `agent`\?\)$/),
    ]);
  });

  it('suggests nothing for a key near no known one', async () => {
    const bad = write('bad.yaml', ['agent: worker', 'zzz: 1', 'runs: [{ task: x }]'].join('\n'));
    expect(await problemsOf(bad)).toEqual([expect.not.stringContaining('did you mean')]);
  });
});
