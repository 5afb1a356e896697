import { describe, expect, it } from 'vitest';
import {
  DEFAULT_BASH_OUTPUT_BYTE_LIMIT,
  DEFAULT_BASH_TIMEOUT_SECS,
  DEFAULT_MAX_STEPS,
  DEFAULT_RECOVERY,
  DEFAULT_TOOL_RETRY,
} from '../../src/constants.ts';
import { DISPLAY_KEYS } from '../../src/definition/constants.ts';
import { type LoadOptions, parseDefinition } from '../../src/definition/load.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';

const FILE = '/project/.troupe/agents/a.md';

function parse(frontmatter: string, options?: LoadOptions) {
  return parseDefinition(`---\n${frontmatter}\n---\nThe body.\n`, FILE, options);
}

function definitionOf(frontmatter: string, options?: LoadOptions): AgentDefinition {
  const result = parse(frontmatter, options);
  expect(result.errors).toEqual([]);
  if (!result.definition) throw new Error('expected a definition');
  return result.definition;
}

describe('defaults', () => {
  it('fills in every field a minimal definition leaves out', () => {
    expect(definitionOf('name: reviewer\ndescription: Reviews code.')).toEqual({
      name: 'reviewer',
      description: 'Reviews code.',
      body: 'The body.',
      promptMode: 'extend',
      tools: undefined,
      disallowedTools: [],
      permissionMode: 'default',
      permissions: { allow: [], ask: [], deny: [] },
      skills: [],
      agentsMd: true,
      outputFormat: 'default',
      bash: { timeoutSecs: DEFAULT_BASH_TIMEOUT_SECS, outputByteLimit: DEFAULT_BASH_OUTPUT_BYTE_LIMIT },
      toolNameOverrides: {},
      paramNameOverrides: {},
      completionRequirement: undefined,
      toolConfig: {},
      model: 'default',
      maxSteps: DEFAULT_MAX_STEPS,
      enabled: true,
      outputSchema: undefined,
      instructions: undefined,
      settings: [],
      modelSettings: {},
      modelSettingsBlock: undefined,
      source: 'project',
      path: FILE,
      extra: {},
      mcpServers: [],
      bodyLine: 5,
      text: expect.stringContaining('name: reviewer'),
      textHash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });

  it('reads every field when given', () => {
    const definition = definitionOf(
      [
        'name: full-agent',
        'description: All fields.',
        'promptMode: full',
        'tools: [read_file, run_terminal_cmd]',
        'disallowedTools: [web_fetch]',
        'permissionMode: plan',
        'skills: [pdf, "git"]',
        'agentsMd: false',
        'outputFormat: concise',
        'bash: { timeoutSecs: 30, outputByteLimit: 1000, cmdPrefix: "set -euo pipefail;" }',
        'toolNameOverrides: { read_file: Read }',
        'paramNameOverrides: { read_file: { path: file_path } }',
        'completionRequirement:',
        '  tool: complete_task',
        '  reminder: Call it.',
        '  recovery: { maxRetries: 5, baseDelayMs: 10 }',
        'toolConfig: { web_fetch: { retry: { maxRetries: 2 } } }',
        'model: gpt-4.1',
        'maxSteps: 12',
        'enabled: false',
        'outputSchema: { type: object, properties: { answer: { type: string } }, required: [answer] }',
      ].join('\n'),
    );
    expect(definition).toMatchObject({
      promptMode: 'full',
      tools: ['read_file', 'run_terminal_cmd'],
      disallowedTools: ['web_fetch'],
      permissionMode: 'plan',
      skills: ['pdf', 'git'],
      agentsMd: false,
      outputFormat: 'concise',
      bash: { timeoutSecs: 30, outputByteLimit: 1000, cmdPrefix: 'set -euo pipefail;' },
      toolNameOverrides: { read_file: 'Read' },
      paramNameOverrides: { read_file: { path: 'file_path' } },
      completionRequirement: {
        tool: 'complete_task',
        reminder: 'Call it.',
        recovery: { maxRetries: 5, baseDelayMs: 10, maxDelayMs: DEFAULT_RECOVERY.maxDelayMs },
      },
      toolConfig: { web_fetch: { retry: { ...DEFAULT_TOOL_RETRY, maxRetries: 2 } } },
      model: 'gpt-4.1',
      maxSteps: 12,
      enabled: false,
      outputSchema: { type: 'object', required: ['answer'] },
    });
  });

  it('gives a completion requirement a default reminder and recovery policy', () => {
    const { completionRequirement } = definitionOf(
      'name: a\ndescription: d\ncompletionRequirement: { tool: complete_task }',
    );
    expect(completionRequirement?.recovery).toEqual(DEFAULT_RECOVERY);
    expect(completionRequirement?.reminder).toContain('`complete_task`');
  });

  it('treats `key:` with no value as not set', () => {
    expect(definitionOf('name: a\ndescription: d\ntools:\nmodel:\nmaxSteps:')).toMatchObject({
      tools: undefined,
      model: 'default',
      maxSteps: DEFAULT_MAX_STEPS,
    });
  });
});

describe('Claude Code compatibility', () => {
  it('reads tools as a comma-separated string', () => {
    expect(definitionOf('name: a\ndescription: d\ntools: Read, Grep,  Glob ,Read').tools).toEqual([
      'Read',
      'Grep',
      'Glob',
    ]);
  });

  it('reads a quoted `*` as every tool and `[]` as no tools', () => {
    expect(definitionOf('name: a\ndescription: d\ntools: "*"').tools).toBeUndefined();
    expect(definitionOf('name: a\ndescription: d\ntools: ["*"]').tools).toBeUndefined();
    expect(definitionOf('name: a\ndescription: d\ntools: []').tools).toEqual([]);
  });

  it('keeps model aliases as written', () => {
    for (const model of ['sonnet', 'opus', 'haiku', 'inherit', 'Claude Sonnet 4.5 (copilot)']) {
      expect(definitionOf(`name: a\ndescription: d\nmodel: ${model}`).model).toBe(model);
    }
  });

  it('warns (unknown_model) about a model that is no alias and cannot be an id, with the forms and a likely alias; never about an id', () => {
    const fable = parse('name: a\ndescription: d\nmodel: fable');
    expect(fable.errors).toEqual([]);
    expect(fable.definition?.model).toBe('fable');
    expect(fable.warnings).toMatchObject([{ code: 'unknown_model', path: '/model', line: 4, column: 8 }]);
    const [warning] = fable.warnings;
    expect(warning?.message).toContain('found `fable`');
    expect(warning?.message).toContain('`sonnet`, `haiku`');
    expect(warning?.message).toContain('`inherit`');
    expect(warning?.message).not.toContain('did you mean');
    const typo = parse('name: a\ndescription: d\nmodel: sonet');
    expect(typo.warnings[0]?.message).toContain('found `sonet` (did you mean `sonnet`?)');
    const spaced = parse('name: a\ndescription: d\nmodel: GPT-5 (copilot)');
    expect(spaced.warnings).toMatchObject([
      { code: 'unknown_model', message: expect.stringContaining('no spaces') },
    ]);
    // Any name shaped like a model id is accepted without a warning, known to troupe or not.
    const names = [
      'claude-opus-5-1',
      'claude-sonnet-4-20250514',
      'gpt-6',
      'o3',
      'qwen3:8b',
      'openai/gpt-4o',
      'mistral-large-latest',
      'SONNET',
      'Inherit',
      'default',
      'simulated',
      'Claude Sonnet 4',
      'Claude Sonnet 4.5 (copilot)',
    ];
    for (const model of names) {
      expect(parse(`name: a\ndescription: d\nmodel: ${model}`).warnings, model).toEqual([]);
    }
  });

  it('maps maxTurns to maxSteps, and maxSteps wins over maxTurns with a warning', () => {
    expect(definitionOf('name: a\ndescription: d\nmaxTurns: 50').maxSteps).toBe(50);
    const both = parse('name: a\ndescription: d\nmaxSteps: 7\nmaxTurns: 50');
    expect(both.definition?.maxSteps).toBe(7);
    expect(both.warnings).toMatchObject([{ code: 'invalid_field', path: '/maxTurns', line: 5 }]);
  });

  it('accepts display keys silently and keeps them in extra', () => {
    const keys = [...DISPLAY_KEYS];
    const result = parse(`name: a\ndescription: d\n${keys.map((key) => `${key}: x`).join('\n')}`);
    expect(result.warnings).toEqual([]);
    expect(Object.keys(result.definition?.extra ?? {})).toEqual(keys);
  });

  it('reads skills given as one string', () => {
    expect(definitionOf('name: a\ndescription: d\nskills: markdown-linting').skills).toEqual([
      'markdown-linting',
    ]);
  });
});

describe('problems', () => {
  it('collects every problem in one pass, each with code, position and JSON pointer', () => {
    const result = parse(
      [
        'description: 42', // line 2
        'promptMode: partial',
        'maxSteps: 0',
        'completionRequirement:',
        '  reminder: hurry', // line 6
        'tools: [Read, 7]',
        'bash: { timeoutSecs: -1, extra: 1 }',
        'memory: project', // line 9
      ].join('\n'),
    );
    const summary = result.errors.map(({ code, path, line, column }) => ({ code, path, line, column }));
    expect(summary).toEqual([
      { code: 'missing_field', path: '/name', line: 1, column: 1 },
      { code: 'invalid_field', path: '/description', line: 2, column: 14 },
      { code: 'invalid_field', path: '/tools/1', line: 7, column: 15 },
      { code: 'invalid_field', path: '/promptMode', line: 3, column: 13 },
      { code: 'invalid_field', path: '/bash/timeoutSecs', line: 8, column: 22 },
      { code: 'invalid_field', path: '/completionRequirement/tool', line: 5, column: 1 },
      { code: 'invalid_field', path: '/maxSteps', line: 4, column: 11 },
    ]);
    expect(result.warnings.map(({ code, path }) => [code, path])).toEqual([
      ['unknown_key', '/bash/extra'],
      ['unknown_key', '/memory'],
    ]);
    expect(result.errors.every((problem) => problem.file === FILE && problem.severity === 'error')).toBe(
      true,
    );
  });

  it('says what was expected and what was found', () => {
    const messages = parse('name: a\ndescription: d\nmaxSteps: 0\npromptMode: partial').errors.map(
      (e) => e.message,
    );
    expect(messages).toContain('Expected `maxSteps` to be a positive integer, got `0` (number)');
    expect(messages).toContain(
      'Expected `promptMode` to be one of `extend`, `full`, got `"partial"` (string)',
    );
  });

  it('rejects a completion requirement without a tool', () => {
    const result = parse('name: a\ndescription: d\ncompletionRequirement:\n  reminder: go');
    expect(result.errors).toMatchObject([
      { code: 'invalid_field', path: '/completionRequirement/tool', line: 4 },
    ]);
  });

  it('keeps a toolConfig entry without retry empty: a wait_for_instruction entry does not bound its wait', () => {
    const { toolConfig } = definitionOf(
      'name: a\ndescription: d\ntoolConfig:\n  wait_for_instruction: {}\n  grep: { retry: { maxRetries: 1 } }',
    );
    expect(toolConfig).toEqual({
      wait_for_instruction: {},
      grep: { retry: { ...DEFAULT_TOOL_RETRY, maxRetries: 1 } },
    });
  });

  it('rejects a retry policy whose cap is below its base delay', () => {
    const result = parse(
      'name: a\ndescription: d\ntoolConfig:\n  x:\n    retry: { baseDelayMs: 500, maxDelayMs: 100 }',
    );
    expect(result.errors).toMatchObject([
      { code: 'invalid_field', path: '/toolConfig/x/retry/maxDelayMs', line: 6 },
    ]);
  });

  it('rejects an outputSchema that is not a JSON Schema', () => {
    const result = parse('name: a\ndescription: d\noutputSchema: { type: 12 }');
    expect(result.errors).toMatchObject([
      { code: 'invalid_field', path: '/outputSchema', line: 4, column: 15 },
    ]);
  });

  it('rejects model-facing names providers would refuse and two tools shown under one name', () => {
    const result = parse('name: a\ndescription: d\ntoolNameOverrides: { a: "bad name", b: X, c: X }');
    expect(result.errors.map((problem) => problem.path)).toEqual([
      '/toolNameOverrides/a',
      '/toolNameOverrides/c',
    ]);
  });

  it('warns about unknown keys, keeps them in extra and suggests the known spelling', () => {
    const result = parse('name: a\ndescription: d\nmax_steps: 3\nhooks: { PreToolUse: [] }');
    expect(result.definition?.extra).toEqual({ max_steps: 3, hooks: { PreToolUse: [] } });
    expect(result.warnings[0]?.message).toContain('did you mean `maxSteps`?');
    expect(result.warnings.map((problem) => [problem.code, problem.line, problem.column])).toEqual([
      ['unknown_key', 4, 1],
      ['unknown_key', 5, 1],
    ]);
  });

  it('keeps a `__proto__` key as data, not as a prototype', () => {
    const extra = parse('name: a\ndescription: d\n__proto__: { polluted: true }').definition?.extra ?? {};
    expect(Object.getPrototypeOf(extra)).toBe(Object.prototype);
    expect(Object.hasOwn(extra, '__proto__')).toBe(true);
  });

  it('warns when maxSteps is above the hard cap', () => {
    const result = parse('name: a\ndescription: d\nmaxSteps: 1000');
    expect(result.definition?.maxSteps).toBe(1000);
    expect(result.warnings).toMatchObject([{ code: 'invalid_field', path: '/maxSteps' }]);
  });

  it('warns about an empty body', () => {
    const result = parseDefinition('---\nname: a\ndescription: d\n---\n\n', FILE);
    expect(result.warnings).toMatchObject([{ code: 'missing_field', line: 4 }]);
  });
});

describe('names', () => {
  it('accepts lowercase slugs with -, _ and .', () => {
    for (const name of ['a', 'code-reviewer', 'powershell-5.1-expert', 'microsoft_learn_contributor']) {
      expect(definitionOf(`name: ${name}\ndescription: d`).name).toBe(name);
    }
  });

  it('rejects capitals and spaces in troupe dirs', () => {
    const result = parse('name: ZK Steward\ndescription: d');
    expect(result.errors).toMatchObject([{ code: 'invalid_field', path: '/name', line: 2, column: 7 }]);
    expect(result.errors[0]?.message).toContain('for example `zk-steward`');
  });

  it('slugifies with a warning in compat dirs', () => {
    const result = parse('name: Python DevOps/CI-CD Expert\ndescription: d', { source: 'compat' });
    expect(result.definition?.name).toBe('python-devops-ci-cd-expert');
    expect(result.warnings).toMatchObject([{ code: 'name_slugified', path: '/name' }]);
  });

  it('rejects a name that has no usable characters even in compat dirs', () => {
    expect(parse('name: "🗃️"\ndescription: d', { source: 'compat' }).errors).toMatchObject([
      { code: 'invalid_field', path: '/name' },
    ]);
  });
});

describe('tool references', () => {
  const knownTools = new Set(['read_file', 'run_terminal_cmd', 'complete_task']);

  it('reports overrides and configs for tools the registry does not know', () => {
    const result = parse(
      'name: a\ndescription: d\ntoolNameOverrides: { read_fil: Read }\nparamNameOverrides: { nope: { a: b } }\ntoolConfig: { run_terminal_cmd: {}, ghost: {} }',
      { knownTools },
    );
    expect(result.errors.map(({ code, path, line }) => [code, path, line])).toEqual([
      ['unknown_tool_override', '/toolNameOverrides/read_fil', 4],
      ['unknown_tool_override', '/paramNameOverrides/nope', 5],
      ['unknown_tool_override', '/toolConfig/ghost', 6],
    ]);
  });

  it('warns about unknown names in tools and disallowedTools, at the name inside a string', () => {
    const result = parse(
      'name: a\ndescription: d\ntools: [read_file, Read, Glob, reed]\ndisallowedTools: Bash, BASSH',
      {
        knownTools,
      },
    );
    expect(result.errors).toEqual([]);
    expect(result.warnings.map(({ code, path, line, column }) => [code, path, line, column])).toEqual([
      ['unknown_tool', '/tools/2', 4, 26],
      ['unknown_tool', '/tools/3', 4, 32],
      ['unknown_tool', '/disallowedTools/1', 5, 24],
    ]);
    expect(result.warnings[0]?.message).toContain('admits `glob`, which is not registered here');
  });

  it('says once, at `tools` and before the entries, that an agent none of whose tools entries names a tool runs with none', () => {
    const vscode = parse('name: a\ndescription: d\ntools: codebase, terminalCommand, edit/editFiles', {
      knownTools,
    });
    expect(vscode.errors).toEqual([]);
    expect(vscode.warnings.map(({ code, path, line, column }) => [code, path, line, column])).toEqual([
      ['no_tools', '/tools', 4, 1],
      ['unknown_tool', '/tools/0', 4, 8],
      ['unknown_tool', '/tools/1', 4, 18],
      ['unknown_tool', '/tools/2', 4, 35],
    ]);
    expect(vscode.warnings[0]?.message).toBe(
      'None of the 3 `tools` entries names a tool troupe has here: the agent runs with no tools but `complete_task` and can only answer from its task; fix the entries (see the warning at each), remove `tools` for every tool, or write `tools: []` for none',
    );
    expect(parse('name: a\ndescription: d\ntools: [reed]', { knownTools }).warnings[0]?.message).toMatch(
      /^The only `tools` entry names no tool troupe has here/,
    );
    // One tool is enough; `[]` asks for none; an MCP server's tools may exist once it connects.
    const quiet = [
      'tools: [codebase, Read]',
      'tools: []',
      'tools: [mcp__docs__search]\nmcpServers: [{ docs: { command: x } }]',
    ];
    for (const line of quiet) {
      const codes = parse(`name: a\ndescription: d\n${line}`, { knownTools }).warnings.map((w) => w.code);
      expect(codes, line).not.toContain('no_tools');
    }
  });

  it('places each name of a tools string that goes on over more lines at its own line', () => {
    // Before: every name after the first line pointed at the first line (`tools: Read,` 4:8).
    const strict = parse('name: a\ndescription: d\ntools: read_file,\n  reed,\n  Glob', { knownTools });
    expect(strict.warnings.map(({ code, path, line, column }) => [code, path, line, column])).toEqual([
      ['unknown_tool', '/tools/1', 5, 3],
      ['unknown_tool', '/tools/2', 6, 3],
    ]);
    const folded = parse('name: a\ndescription: d\ntools: >\n  read_file, reed,\n  reed2', { knownTools });
    expect(folded.warnings.map(({ path, line, column }) => [path, line, column])).toEqual([
      ['/tools/1', 5, 14],
      ['/tools/2', 6, 3],
    ]);
    // A Claude Code file whose YAML fails (`description: **Bold**: ...`), read line by line.
    const lenient = parseDefinition(
      '---\nname: a\ndescription: **Bold**: text\ntools: Read, reed,\n  reedy\nmodel: sonet\n---\nbody\n',
      '/project/.claude/agents/a.md',
      { source: 'compat', knownTools },
    );
    const located = lenient.warnings.filter((warning) => warning.code !== 'lenient_parse');
    expect(located.map(({ code, path, line, column }) => [code, path, line, column])).toEqual([
      ['unknown_model', '/model', 6, 8],
      ['unknown_tool', '/tools/1', 4, 14],
      ['unknown_tool', '/tools/2', 5, 3],
    ]);
    // A name inside a longer one is not it: `reed` is the second entry, not the start of `reedy`.
    const inside = parse('name: a\ndescription: d\ntools: reedy,\n  reed', { knownTools });
    expect(inside.warnings.map(({ path, line, column }) => [path, line, column])).toEqual([
      ['/tools', 4, 1],
      ['/tools/0', 4, 8],
      ['/tools/1', 5, 3],
    ]);
  });

  it('suggests the tool a one-typo name in tools meant (`read_fil` -> `read_file`)', () => {
    // It said only "matches no registered tool; it is ignored": the hint came for case and separators alone.
    const result = parse('name: a\ndescription: d\ntools: read_fil, Grpe, complete_task', {
      knownTools: { names: ['read_file', 'grep', 'complete_task'] },
    });
    expect(result.warnings.map((warning) => warning.message)).toEqual([
      '`read_fil` in `tools` matches no registered tool (did you mean `read_file`?); it is ignored',
      '`Grpe` in `tools` matches no registered tool (did you mean `grep`?); it is ignored',
    ]);
  });

  it('says that a bare MCP server name (`github`) in tools is no tool, and how its tools are written', () => {
    const result = parse('name: a\ndescription: d\ntools: Read, github, mcp-server-docs, frob', {
      knownTools: { names: [...knownTools, 'glob'] },
    });
    const messages = result.warnings.map((warning) => warning.message);
    expect(messages).toHaveLength(3);
    expect(messages[0]).toBe(
      "`github` in `tools` matches no registered tool: it looks like the name of an MCP server, not of a tool; write `mcp__github__*` for all of its tools or `mcp__github__<tool>` for one, and configure the server in .mcp.json or the definition's `mcpServers` (troupe connects no other); it is ignored",
    );
    expect(messages[1]).toContain(
      '`mcp-server-docs` in `tools` matches no registered tool: it looks like the name of an MCP server',
    );
    expect(messages[1]).toContain('`mcp__mcp-server-docs__*`');
    expect(messages[2]).toBe('`frob` in `tools` matches no registered tool; it is ignored');
    // A server configured here (.mcp.json, the definition) or connected: said as such.
    const configured = parse('name: a\ndescription: d\ntools: Read, docs', {
      knownTools: { names: knownTools, unlistedMcpServers: ['docs'] },
    });
    const connected = parse('name: a\ndescription: d\ntools: Read, docs', {
      knownTools: { names: [...knownTools, 'mcp__docs__search'] },
    });
    for (const { warnings } of [configured, connected]) {
      expect(warnings.map((warning) => warning.message)).toEqual([
        '`docs` in `tools` names the MCP server `docs`, not a tool: write `mcp__docs__*` for all of its tools or `mcp__docs__<tool>` for one; it is ignored',
      ]);
    }
  });

  it('does not check tool names when no registry is given', () => {
    expect(parse('name: a\ndescription: d\ntoolNameOverrides: { anything: X }').errors).toEqual([]);
  });
});
