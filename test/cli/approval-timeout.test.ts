/**
 * `--approval-timeout SECONDS` past the longest timer delay (2147483.647 s): Node fires such a
 * timer at once, so every call that asked was denied `no decision within ...` before anybody could
 * answer. The commands that take the flag refuse it before anything runs.
 */
import { readdirSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Project, runCli } from '../fixtures/cli/cli-helpers.ts';

let project: Project;
beforeEach(() => {
  project = new Project({ 'a.txt': 'alpha\n' });
});
afterEach(() => project.remove());

describe('--approval-timeout', () => {
  it('refuses a timeout past the longest timer delay, naming the bound', async () => {
    for (const command of [
      ['run', 'reader', '--task', 'Read a.txt'],
      ['fanout', 'plan.yaml'],
    ]) {
      const result = await runCli(...command, '--cwd', project.root, '--approval-timeout', '3000000');
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        'Expected a non-negative number of seconds up to 2147483.647 (0 = no limit), got `"3000000"` (string).',
      );
    }
    expect(readdirSync(project.root)).not.toContain('run.jsonl');
  });
});
