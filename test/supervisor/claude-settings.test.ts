import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { commandPermissions } from '../../src/cli/shared/permission-flags.ts';
import type { EventOf } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { planTask } from '../fixtures/approvals/plan-provider.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { tempDir } from './helpers.ts';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/approvals');

const open: Supervisor[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const supervisor of open.splice(0)) await supervisor.close();
});

function write(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}

/** A git project at `project` (its files and Claude Code settings) and a home with its own settings. */
function project(files: Record<string, string>): { project: string; home: string } {
  const root = tempDir('troupe-claude-settings-');
  const dir = path.join(root, 'project');
  mkdirSync(path.join(dir, '.git'), { recursive: true });
  for (const [name, text] of Object.entries(files)) write(path.join(dir, name), text);
  const home = path.join(root, 'home');
  mkdirSync(home);
  vi.stubEnv('HOME', home);
  return { project: dir, home };
}

const settings = (permissions: object): string => JSON.stringify({ permissions }, null, 2);

describe("Claude Code's settings files", () => {
  it("apply their deny rules to a Supervisor's agents, settings.local.json adding to settings.json", async () => {
    const { project: dir, home } = project({
      'secrets/key.txt': 'TOP SECRET',
      'private.txt': 'mine',
      'ok.txt': 'fine',
      '.claude/settings.json': settings({ deny: ['Read(./secrets/**)'] }),
      '.claude/settings.local.json': settings({ deny: ['Read(./private.txt)'] }),
    });
    write(path.join(home, '.claude', 'settings.json'), settings({ allow: ['Read'] }));
    const supervisor = new Supervisor({
      threads: 1,
      providers: { plan: { kind: 'module', module: path.join(fixtures, 'plan-provider.ts') } },
      definitions: [makeDefinition({ name: 'reader', path: '/settings/reader.md', agentsMd: false })],
      compat: false,
      mcpProjectFile: false,
      journalDir: path.join(dir, '..', 'journals'),
      cwd: dir,
    });
    open.push(supervisor);
    const handle = supervisor.spawn('reader', {
      task: planTask([
        { name: 'read_file', args: { path: 'secrets/key.txt' } },
        { name: 'read_file', args: { path: 'private.txt' } },
        { name: 'read_file', args: { path: 'ok.txt' } },
      ]),
    });
    expect(await handle.result).toMatchObject({ status: 'completed' });
    const results = readJournal(path.join(dir, '..', 'journals', `${handle.id}.jsonl`)).events.filter(
      (event): event is EventOf<'ToolResult'> => event.type === 'ToolResult',
    );
    expect(results.map((result) => [result.ok, result.text])).toEqual([
      [false, expect.stringContaining('Read(./secrets/**)')],
      [false, expect.stringContaining('Read(./private.txt)')],
      [true, expect.stringContaining('fine')],
    ]);
    expect(results.map((result) => result.text).join('\n')).not.toContain('TOP SECRET');
  });

  it('come first for `troupe run`: the most specific mode wins, the flags over it, additionalDirectories warns', () => {
    const { project: dir, home } = project({
      '.claude/settings.json': settings({ defaultMode: 'plan', deny: ['Bash(rm:*)'] }),
      '.claude/settings.local.json': settings({ defaultMode: 'acceptEdits', ask: ['Bash(git push:*)'] }),
    });
    write(
      path.join(home, '.claude', 'settings.json'),
      settings({ allow: ['Bash(git diff:*)'], additionalDirectories: ['../other'] }),
    );
    const asked = commandPermissions({ deny: ['Edit(.env)'] }, path.join(dir, 'sub'));
    expect(asked.permissions).toEqual({
      mode: 'acceptEdits',
      allow: ['Bash(git diff:*)'],
      ask: ['Bash(git push:*)'],
      deny: ['Bash(rm:*)', 'Edit(.env)'],
    });
    expect(asked.warnings).toEqual([
      expect.stringMatching(
        /home\/\.claude\/settings\.json:6:5: permissions\.additionalDirectories: ignored/,
      ),
    ]);
    expect(commandPermissions({ permissionMode: 'dontAsk' }, dir).permissions?.mode).toBe('dontAsk');
  });

  it('refuse a file that is not JSON, naming it with the line and column', () => {
    const { project: dir } = project({
      '.claude/settings.local.json': '{\n  "permissions": {\n    "deny": ["Read(./secrets/**)"\n  }\n}\n',
    });
    const file = path.join(dir, '.claude', 'settings.local.json');
    expect(() => commandPermissions({}, dir)).toThrow(
      expect.objectContaining({
        code: 'invalid_permissions',
        message: expect.stringMatching(new RegExp(`${file.replaceAll('.', '\\.')}:\\d+:\\d+: `)),
      }),
    );
    expect(
      () =>
        new Supervisor({ providers: { simulated: { kind: 'simulated' } }, cwd: dir, mcpProjectFile: false }),
    ).toThrow(expect.objectContaining({ code: 'invalid_permissions' }));
  });

  it('cannot consent to bypassPermissions for the caller', () => {
    const { project: dir } = project({
      '.claude/settings.json': settings({ defaultMode: 'bypassPermissions', allowBypass: true }),
    });
    expect(() => commandPermissions({}, dir)).toThrow(
      expect.objectContaining({
        code: 'invalid_permissions',
        message: expect.stringContaining('allowBypass'),
      }),
    );
  });
});
