import { describe, expect, it } from 'vitest';
import { parseDefinition } from '../../src/definition/load.ts';
import type { DefinitionProblem } from '../../src/definition/types.ts';

const FILE = '/agents/a.md';

function only(problems: readonly DefinitionProblem[]): DefinitionProblem {
  expect(problems).toHaveLength(1);
  const [problem] = problems;
  if (!problem) throw new Error('unreachable');
  return problem;
}

describe('frontmatter split', () => {
  it('reads a plain file and records where the body starts', () => {
    const result = parseDefinition('---\nname: a\ndescription: d\n---\n\n\nHello\nworld\n\n', FILE);
    expect(result.errors).toEqual([]);
    expect(result.definition?.body).toBe('Hello\nworld');
    expect(result.definition?.bodyLine).toBe(7);
  });

  it('strips a UTF-8 BOM and keeps line numbers', () => {
    const result = parseDefinition('\uFEFF---\nname: a\ndescription: d\nmaxSteps: 0\n---\nbody', FILE);
    expect(only(result.errors)).toMatchObject({
      code: 'invalid_field',
      line: 4,
      column: 11,
      path: '/maxSteps',
    });
  });

  it('handles CRLF line endings: positions are unchanged and the body has LF only', () => {
    const text = '---\r\nname: a\r\ndescription: d\r\npromptMode: partial\r\n---\r\nline one\r\nline two\r\n';
    const result = parseDefinition(text, FILE);
    expect(only(result.errors)).toMatchObject({ code: 'invalid_field', line: 4, column: 13 });
    const fixed = parseDefinition(text.replace('partial', 'full'), FILE);
    expect(fixed.definition?.body).toBe('line one\nline two');
  });

  it('allows blank lines before the opening fence and counts them', () => {
    const result = parseDefinition('\n  \n---\nname: a\ndescription: d\nagentsMd: nope\n---\nbody', FILE);
    expect(only(result.errors)).toMatchObject({ line: 6, column: 11, path: '/agentsMd' });
  });

  it('stops the frontmatter at the first fence: `---` lines in the body do not matter', () => {
    const body = 'Intro\n\n---\n\nMore\n---\nname: other\n---\nEnd';
    const result = parseDefinition(`---\nname: a\ndescription: d\n---\n${body}\n`, FILE);
    expect(result.definition?.name).toBe('a');
    expect(result.definition?.body).toBe(body);
  });

  it('keeps fenced frontmatter examples in the body as body text', () => {
    const body = [
      'Write files like this:',
      '',
      '```markdown',
      '---',
      'name: example',
      'tools: *',
      '---',
      '```',
    ].join('\n');
    const result = parseDefinition(`---\nname: a\ndescription: d\n---\n${body}\n`, FILE);
    expect(result.errors).toEqual([]);
    expect(result.definition).toMatchObject({ name: 'a', body });
  });

  it('reports a file without frontmatter at its first non-blank line', () => {
    const result = parseDefinition('\n\n# Agents\n\nSome text\n---\nname: x\n---\n', FILE);
    const problem = only(result.errors);
    expect(problem).toMatchObject({ code: 'parse_error', line: 3, column: 1, path: '', file: FILE });
    expect(problem.message).toContain('found `# Agents`');
  });

  it('reports an unclosed frontmatter at its opening fence', () => {
    const result = parseDefinition('\n---\nname: a\ndescription: d\n', FILE);
    expect(only(result.errors)).toMatchObject({ code: 'parse_error', line: 2, column: 1 });
  });

  it('reports an empty file', () => {
    expect(only(parseDefinition('', FILE).errors)).toMatchObject({ code: 'parse_error', line: 1, column: 1 });
  });

  it('rejects a closing line of many dashes in strict mode and accepts it with a warning in lenient mode', () => {
    const text = '---\nname: a\ndescription: d\n--------\nbody\n';
    expect(only(parseDefinition(text, FILE).errors)).toMatchObject({
      code: 'parse_error',
      line: 4,
      column: 1,
    });
    const lenient = parseDefinition(text, FILE, { source: 'compat' });
    expect(lenient.definition?.body).toBe('body');
    expect(only(lenient.warnings)).toMatchObject({ code: 'lenient_parse', line: 4 });
  });

  it('reads a file indented as a whole only in lenient mode, with positions in the original columns', () => {
    const text =
      '\n    ---\n    name: a\n    description: d\n    maxSteps: -1\n    ---\n\n    Body\n      indented\n';
    expect(only(parseDefinition(text, FILE).errors)).toMatchObject({
      code: 'parse_error',
      line: 2,
      column: 5,
    });
    const lenient = parseDefinition(text, FILE, { source: 'compat' });
    expect(lenient.errors).toMatchObject([{ code: 'invalid_field', line: 5, column: 15, path: '/maxSteps' }]);
    const fixed = parseDefinition(text.replace('-1', '3'), FILE, { source: 'compat' });
    expect(fixed.definition).toMatchObject({ maxSteps: 3, body: 'Body\n  indented', bodyLine: 8 });
  });

  it('treats an empty frontmatter as a mapping with missing fields', () => {
    const result = parseDefinition('---\n---\nbody', FILE);
    expect(result.errors.map((problem) => [problem.code, problem.path, problem.line])).toEqual([
      ['missing_field', '/name', 1],
      ['missing_field', '/description', 1],
    ]);
  });

  it('rejects frontmatter that is a list or a single value', () => {
    expect(only(parseDefinition('---\n- a\n- b\n---\nx', FILE).errors)).toMatchObject({
      code: 'parse_error',
      line: 2,
    });
    const scalar = only(parseDefinition('---\njust words\n---\nx', FILE).errors);
    expect(scalar.message).toContain('found a single value `"just words"` (string)');
  });
});

describe('strict YAML errors', () => {
  it('points at the `: ` inside an unquoted description', () => {
    const text = '---\nname: a\ndescription: Use it. Triggers on: review\ntools: Read\n---\nbody';
    const problem = only(parseDefinition(text, FILE).errors);
    const column = 'description: Use it. Triggers on'.length + 1;
    expect(problem).toMatchObject({ code: 'parse_error', line: 3, column });
    expect(problem.message).toContain('expected a plain text value for `description`, found `: ` inside it');
  });

  it('explains `tools: *` as an alias at the asterisk', () => {
    const problem = only(parseDefinition('---\nname: a\ndescription: d\ntools: *\n---\nbody', FILE).errors);
    expect(problem).toMatchObject({ code: 'parse_error', line: 4, column: 8 });
    expect(problem.message).toContain('which YAML reads as an alias');
  });

  it('reports duplicated keys', () => {
    const problem = only(parseDefinition('---\nname: a\nname: b\ndescription: d\n---\nx', FILE).errors);
    expect(problem).toMatchObject({ code: 'parse_error', line: 3, column: 1 });
  });

  it('reports separate broken entries separately, one error per entry', () => {
    const text = '---\nname: [a\ndescription: x: y\nmodel: sonnet\n---\nbody';
    const lines = parseDefinition(text, FILE).errors.map((problem) => problem.line);
    expect(new Set(lines).size).toBe(lines.length);
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines.every((line) => line >= 2 && line <= 4)).toBe(true);
  });

  it('never falls back to line reading in strict mode', () => {
    const result = parseDefinition('---\nname: a\ndescription: a: b\n---\nbody', FILE, {
      mode: 'strict',
      source: 'compat',
    });
    expect(result.definition).toBeUndefined();
    expect(result.errors[0]?.code).toBe('parse_error');
    expect(result.warnings.some((problem) => problem.code === 'lenient_parse')).toBe(false);
  });

  it('guards against alias bombs', () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x]',
      ...'bcdefgh'.split('').map((k, i) => `${k}: &${k} [${`*${'abcdefgh'[i]}, `.repeat(9).slice(0, -2)}]`),
    ];
    const result = parseDefinition(`---\nname: a\ndescription: d\n${bomb.join('\n')}\n---\nx`, FILE);
    expect(result.errors[0]).toMatchObject({ code: 'parse_error' });
  });
});
