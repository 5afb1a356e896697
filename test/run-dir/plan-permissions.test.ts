import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadPlan } from '../../src/run-dir/plan.ts';
import { loadPermissionsFile, mergeRunPermissions } from '../../src/run-dir/plan-permissions.ts';
import { formatPlanProblem, planProblemsOf } from '../../src/run-dir/plan-problems.ts';
import { tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-plan-permissions-'));
});
afterEach(() => cleanup());

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

async function planProblems(file: string): Promise<string[]> {
  try {
    await loadPlan(file, { cwd: dir });
  } catch (error) {
    const problems = planProblemsOf(error);
    if (!problems) throw error;
    return problems.map((problem) => formatPlanProblem(problem, dir));
  }
  throw new Error('expected the plan to be refused');
}

describe("a plan's permissions and approvals", () => {
  it('are read with the plan and apply to every run', async () => {
    const file = write(
      'plan.yaml',
      [
        'permissions:',
        '  mode: acceptEdits',
        '  allow: ["Bash(npm test:*)"]',
        '  ask: ["Bash(git push:*)", "mcp__github__*"]',
        '  deny: ["Edit(.env)"]',
        'approvals: { timeoutMs: 5000, onTimeout: allow }',
        'runs:',
        '  - { agent: worker, task: Go }',
      ].join('\n'),
    );
    const { plan } = await loadPlan(file, { cwd: dir });
    expect(plan.permissions).toEqual({
      mode: 'acceptEdits',
      allow: ['Bash(npm test:*)'],
      ask: ['Bash(git push:*)', 'mcp__github__*'],
      deny: ['Edit(.env)'],
    });
    expect(plan.approvals).toEqual({ timeoutMs: 5000, onTimeout: 'allow' });
  });

  it('reports a rule it cannot read, an unknown mode and an unknown key at their file:line:column', async () => {
    const file = write(
      'plan.yaml',
      [
        'permissions:',
        '  mode: yolo',
        '  ask: ["Bash(git push:*"]',
        '  allwo: ["Read"]',
        'runs:',
        '  - { agent: worker, task: Go }',
      ].join('\n'),
    );
    const problems = await planProblems(file);
    expect(problems).toHaveLength(3);
    expect(problems.find((line) => line.includes('mode'))).toMatch(/^plan\.yaml:2:9: /);
    expect(problems.find((line) => line.includes('Bash(git push'))).toMatch(/^plan\.yaml:3:\d+: /);
    expect(problems.find((line) => line.includes('allwo'))).toMatch(/^plan\.yaml:4:3: /);
  });
});

describe("a plan's approval timeout", () => {
  it('is refused past the longest timer delay, which timed every approval out at once', async () => {
    const file = write(
      'plan.yaml',
      ['approvals: { timeoutMs: 2147483648 }', 'runs:', '  - { agent: worker, task: Go }'].join('\n'),
    );
    const problems = await planProblems(file);
    expect(problems).toEqual([
      'plan.yaml:1:25: approvals.timeoutMs: expected a non-negative integer up to 2147483647 (0 = no limit), got `2147483648` (number)',
    ]);
  });
});

describe('a --permissions file', () => {
  it('takes the mapping bare or under `permissions:`, and the command line adds to the plan', () => {
    const bare = write('bare.yaml', 'allow: ["Read"]\ndeny: ["Bash(rm:*)"]\n');
    const nested = write('nested.json', '{"permissions": {"ask": ["WebFetch(domain:example.com)"]}}');
    expect(loadPermissionsFile(bare).permissions).toEqual({ allow: ['Read'], deny: ['Bash(rm:*)'] });
    expect(loadPermissionsFile(nested).permissions).toEqual({ ask: ['WebFetch(domain:example.com)'] });
    expect(
      mergeRunPermissions({ mode: 'default', allow: ['Read'] }, { mode: 'dontAsk', allow: ['Grep'] }),
    ).toMatchObject({ mode: 'dontAsk', allow: ['Read', 'Grep'] });
  });

  it('refuses a bad rule with the file, line and column', () => {
    const file = write('rules.yaml', 'allow:\n  - "Read"\n  - "Bash(npm test"\n');
    expect(() => loadPermissionsFile(file)).toThrow(/rules\.yaml:3:5/);
  });

  it("reads Claude Code's settings.json: defaultMode is the mode, additionalDirectories a located warning", () => {
    const file = write(
      'settings.json',
      [
        '{"env": {"A": "1"}, "permissions": {',
        '  "deny": ["Read(./secrets/**)"],',
        '  "additionalDirectories": ["../other"],',
        '  "defaultMode": "plan"',
        '}}',
      ].join('\n'),
    );
    const read = loadPermissionsFile(file);
    expect(read.permissions).toEqual({ deny: ['Read(./secrets/**)'], mode: 'plan' });
    expect(read.warnings).toEqual([
      expect.stringMatching(
        /settings\.json:3:3: permissions\.additionalDirectories: ignored: troupe does not widen/,
      ),
    ]);
  });

  it('refuses a bad file as a permissions file (invalid_permissions), not a plan', () => {
    const file = write('rules.json', '{"permissions": {"defaultMode": "yolo"}}');
    expect(() => loadPermissionsFile(file)).toThrow(
      expect.objectContaining({
        code: 'invalid_permissions',
        message: expect.stringContaining(`Expected a valid permissions file in ${file}`),
      }),
    );
  });

  it('names a missing file as a permissions file, not a plan', () => {
    expect(() => loadPermissionsFile(path.join(dir, 'absent.yaml'))).toThrow(
      expect.objectContaining({
        code: 'permissions_not_found',
        message: expect.stringContaining('Expected a permissions file, could not read '),
      }),
    );
  });
});
