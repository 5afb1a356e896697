import { describe, expect, it } from 'vitest';
import { hasErrorCode } from '../../src/errors.ts';
import { matchRule, parseRule, ruleNamesTool, tryParseRule } from '../../src/tools/rules.ts';
import { readCommandLine } from '../../src/tools/shell-command.ts';

const ctx = { cwd: '/work/project', projectRoot: '/work', home: '/home/me' };

describe('parseRule', () => {
  it('reads bare names, specifiers and `Tool(*)` as the bare tool', () => {
    expect(parseRule('Bash')).toMatchObject({ tool: 'Bash', specifier: undefined });
    expect(parseRule(' Bash(git diff:*) ')).toMatchObject({
      raw: 'Bash(git diff:*)',
      tool: 'Bash',
      specifier: 'git diff:*',
    });
    expect(parseRule('Read(*)')).toMatchObject({ tool: 'Read', specifier: undefined });
    expect(parseRule('mcp__github__*')).toMatchObject({ tool: 'mcp__github__*', specifier: undefined });
    expect(parseRule('WebFetch(domain:example.com)').specifier).toBe('domain:example.com');
  });

  it('refuses malformed rules with a typed error that carries where the rule was written', () => {
    const location = { file: '/a.md', line: 4, column: 9 };
    for (const text of ['Bash(git diff:*', 'Bash()', '', 'two words']) {
      const parsed = tryParseRule(text, location);
      expect('error' in parsed && hasErrorCode(parsed.error, 'invalid_rule')).toBe(true);
    }
    expect(() => parseRule('Bash(', location)).toThrow(/^\/a\.md:4:9: Cannot read the tool rule `Bash\(`/);
  });
});

describe('ruleNamesTool', () => {
  it('matches canonical, model-facing and Claude Code names in any case', () => {
    const modelNames = { run_terminal_cmd: 'Shell' };
    for (const tool of ['run_terminal_cmd', 'RUN_TERMINAL_CMD', 'Bash', 'bash', 'shell', 'SHELL']) {
      expect(ruleNamesTool(parseRule(tool), 'run_terminal_cmd', 'deny', { ...ctx, modelNames })).toBe(true);
    }
    expect(ruleNamesTool(parseRule('Bash'), 'read_file', 'deny', ctx)).toBe(false);
  });

  it('reaches every reading tool with a Read deny rule that has a specifier, only read_file without', () => {
    const rule = parseRule('Read(./.env)');
    expect(
      ['read_file', 'grep', 'glob', 'list_dir'].every((tool) => ruleNamesTool(rule, tool, 'deny', ctx)),
    ).toBe(true);
    expect(ruleNamesTool(rule, 'grep', 'allow', ctx)).toBe(false);
    expect(ruleNamesTool(parseRule('Read'), 'grep', 'deny', ctx)).toBe(false);
  });

  it('names the tools of an MCP server by server or wildcard', () => {
    const tool = 'mcp__github__create_issue';
    expect(ruleNamesTool(parseRule('mcp__github'), tool, 'allow', ctx)).toBe(true);
    expect(ruleNamesTool(parseRule('mcp__github__*'), tool, 'allow', ctx)).toBe(true);
    expect(ruleNamesTool(parseRule('MCP__GitHub__create_issue'), tool, 'allow', ctx)).toBe(true);
    expect(ruleNamesTool(parseRule('mcp__git'), tool, 'allow', ctx)).toBe(false);
    expect(ruleNamesTool(parseRule('mcp__gitlab__*'), tool, 'allow', ctx)).toBe(false);
  });
});

describe('matchRule', () => {
  const bash = (rule: string, command: string, effect: 'allow' | 'deny' = 'allow') =>
    matchRule(parseRule(rule), 'run_terminal_cmd', { command }, ctx, effect);

  it('admits `git diff` with Bash(git diff:*) and refuses rm', () => {
    expect(bash('Bash(git diff:*)', 'git diff')).toBe(true);
    expect(bash('Bash(git diff:*)', 'git diff --stat HEAD~1')).toBe(true);
    expect(bash('Bash(git diff:*)', 'rm -rf /')).toBe(false);
    expect(bash('Bash(git diff:*)', 'git diffx')).toBe(false);
  });

  it('does not let an allowed prefix smuggle another command in', () => {
    for (const command of [
      'git diff && rm -rf /',
      'git diff; rm x',
      'git diff | sh',
      'git diff $(rm x)',
      'git diff `rm x`',
      'git diff > ~/.bashrc',
      'git diff "unterminated',
    ]) {
      expect(bash('Bash(git diff:*)', command), command).toBe(false);
    }
    expect(bash('Bash(git diff:*)', 'git diff 2>&1')).toBe(true);
  });

  it('catches a denied command anywhere in a line, behind wrappers and in substitutions', () => {
    for (const command of [
      'rm -rf x',
      'ls && rm x',
      'echo "$(rm x)"',
      'timeout 5 rm x',
      'FOO=1 rm x',
      '(cd a; rm b)',
    ]) {
      expect(bash('Bash(rm:*)', command, 'deny'), command).toBe(true);
    }
    expect(bash('Bash(rm:*)', 'rmdir x', 'deny')).toBe(false);
  });

  it('catches a denied command inside if/while/for bodies, with a quoted name, and behind wrapper options with values', () => {
    for (const command of [
      'if true; then rm -rf x; fi',
      'if false; then :; else rm x; fi',
      'for f in a b; do rm -rf $f; done',
      'while true; do rm x; break; done',
      '! rm x',
      'coproc rm x',
      "'rm' -rf x",
      '"rm" -rf x',
      '\\rm -rf x',
      'r""m -rf x',
      'timeout -s KILL 5 rm -rf x',
      'sudo -u root rm -rf x',
      'env -u HOME rm x',
      '/bin/rm -rf x',
      '/usr/bin/timeout 5 ./bin/rm x',
      'builtin command rm x',
      'ionice -c 3 rm x',
      'setsid rm x',
    ]) {
      expect(bash('Bash(rm:*)', command, 'deny'), command).toBe(true);
    }
    // Still only the command word: an argument that reads `rm` is not the rm command.
    for (const command of ['echo rm x', 'git commit -m "rm x"', 'sudo -E ls rm', 'if rmdir x; then ls; fi']) {
      expect(bash('Bash(rm:*)', command, 'deny'), command).toBe(false);
    }
    // Allow rules are unchanged: a compound line is allowed only when each part is.
    expect(bash('Bash(npm test:*)', 'if npm test; then rm -rf x; fi')).toBe(false);
  });

  it('supports exact commands, `*` anywhere and word boundaries', () => {
    expect(bash('Bash(npm run build)', 'npm run build')).toBe(true);
    expect(bash('Bash(npm run build)', 'npm run build --watch')).toBe(false);
    expect(bash('Bash(git * main)', 'git checkout main')).toBe(true);
    expect(bash('Bash(ls *)', 'lsof')).toBe(false);
    expect(bash('Bash(ls*)', 'lsof')).toBe(true);
  });

  it('reads path rules like gitignore, from the working directory, project root, home or root', () => {
    const read = (rule: string, file: string) => matchRule(parseRule(rule), 'read_file', { path: file }, ctx);
    expect(read('Read(./docs/**)', 'docs/a/b.md')).toBe(true);
    expect(read('Read(./docs/**)', 'src/a.ts')).toBe(false);
    expect(read('Read(./docs/**)', '../project/docs/x.md')).toBe(true);
    expect(read('Read(*.env)', 'config/prod.env')).toBe(true);
    expect(read('Read(/project/src/**)', 'src/x.ts')).toBe(true);
    expect(read('Read(~/notes/*)', '/home/me/notes/a')).toBe(true);
    expect(read('Read(//etc/**)', '/etc/passwd')).toBe(true);
    expect(read('Read(./docs)', 'docs/inner/file.md')).toBe(true);
  });

  it('checks domains of web fetches and the definition a spawn names', () => {
    const fetch = (rule: string, url: string) => matchRule(parseRule(rule), 'web_fetch', { url }, ctx);
    expect(fetch('WebFetch(domain:example.com)', 'https://example.com/a')).toBe(true);
    expect(fetch('WebFetch(domain:example.com)', 'https://evil.example.com/a')).toBe(false);
    expect(fetch('WebFetch(domain:*.example.com)', 'https://docs.example.com/a')).toBe(true);
    const spawn = (rule: string, agent: string) => matchRule(parseRule(rule), 'spawn_agent', { agent }, ctx);
    expect(spawn('Task(reviewer)', 'reviewer')).toBe(true);
    expect(spawn('Agent(reviewer)', 'writer')).toBe(false);
  });

  it('fails closed for a specifier the tool cannot take: no allow, full deny', () => {
    const rule = parseRule('TodoWrite(anything)');
    expect(matchRule(rule, 'todo_write', {}, ctx, 'allow')).toBe(false);
    expect(matchRule(rule, 'todo_write', {}, ctx, 'deny')).toBe(true);
  });
});

describe('readCommandLine', () => {
  it('splits on operators outside quotes and collects substitutions and file redirections', () => {
    expect(readCommandLine("echo 'a;b' && ls | wc -l").commands).toEqual(["echo 'a;b'", 'ls', 'wc -l']);
    expect(readCommandLine('cat "$(whoami)" <(ls)').substituted).toEqual(['whoami', 'ls']);
    expect(readCommandLine('make >build.log 2>&1').fileRedirections).toEqual(['> build.log']);
    expect(readCommandLine('make >/dev/null 2>&1')).toMatchObject({
      commands: ['make'],
      fileRedirections: [],
    });
  });
});
