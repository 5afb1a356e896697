import { describe, expect, it } from 'vitest';
import { parseDefinition } from '../../src/definition/load.ts';

const FILE = '/home/u/.claude/agents/a.md';
const compat = { source: 'compat' as const };

describe('lenient mode', () => {
  it('is the default for compat sources and reads a broken description as a plain string', () => {
    const text =
      '---\nname: a\ndescription: Use when: the user asks. Examples: <example>x</example>\ntools: Read, Grep\n---\nbody';
    const result = parseDefinition(text, FILE, compat);
    expect(result.errors).toEqual([]);
    expect(result.definition).toMatchObject({
      description: 'Use when: the user asks. Examples: <example>x</example>',
      tools: ['Read', 'Grep'],
    });
    expect(result.warnings).toMatchObject([{ code: 'lenient_parse', line: 3, column: 22 }]);
    expect(result.warnings[0]?.message).toContain('plain strings instead (lenient mode)');
  });

  it('keeps the well-formed entries typed: lists, numbers and booleans survive', () => {
    const text =
      '---\nname: a\ndescription: a: b\ntools: [Read, Grep]\nmaxTurns: 9\nagentsMd: false\n---\nbody';
    expect(parseDefinition(text, FILE, compat).definition).toMatchObject({
      tools: ['Read', 'Grep'],
      maxSteps: 9,
      agentsMd: false,
    });
  });

  it('reads `tools: *` as every tool', () => {
    const result = parseDefinition('---\nname: a\ndescription: d\ntools: *\n---\nbody', FILE, compat);
    expect(result.definition?.tools).toBeUndefined();
    expect(result.warnings).toMatchObject([{ code: 'lenient_parse', line: 4, column: 8 }]);
  });

  it('joins indented continuation lines, and column-1 continuation lines, into the value', () => {
    const text = [
      '---',
      'name: a',
      'description: First line: with colon',
      '',
      '  <example>',
      '    user: hi',
      '  </example>',
      'continued at column one',
      'model: opus',
      '---',
      'body',
    ].join('\n');
    const definition = parseDefinition(text, FILE, compat).definition;
    expect(definition?.description).toBe(
      'First line: with colon\n\n<example>\n  user: hi\n</example>\ncontinued at column one',
    );
    expect(definition?.model).toBe('opus');
  });

  it('reads a value that starts on the next line', () => {
    const text = '---\nname: a\ndescription:\n  Does things: well\n  and more\n---\nbody';
    expect(parseDefinition(text, FILE, compat).definition?.description).toBe('Does things: well\nand more');
  });

  it('keeps literal backslash-n sequences as written', () => {
    const text = '---\nname: a\ndescription: Use it: now.\\n\\nExamples: x\n---\nbody';
    expect(parseDefinition(text, FILE, compat).definition?.description).toBe('Use it: now.\\n\\nExamples: x');
  });

  it('locates problems found after the fallback at their original positions', () => {
    const text = '---\nname: a\ndescription: x: y\npermissionMode: yolo\n---\nbody';
    expect(parseDefinition(text, FILE, compat).errors).toMatchObject([
      { code: 'invalid_field', path: '/permissionMode', line: 4, column: 17 },
    ]);
  });

  it('locates nested keys of entries that YAML could read', () => {
    const text = '---\nname: a\ndescription: x: y\nbash:\n  timeoutSecs: 5\n  weird: 1\n---\nbody';
    const result = parseDefinition(text, FILE, compat);
    expect(result.definition?.bash.timeoutSecs).toBe(5);
    expect(result.warnings).toContainEqual(
      expect.objectContaining({ code: 'unknown_key', path: '/bash/weird', line: 6, column: 3 }),
    );
  });

  it('keeps the first of duplicated keys with a warning', () => {
    const text = '---\nname: a\nname: b\ndescription: d\n---\nbody';
    const result = parseDefinition(text, FILE, compat);
    expect(result.definition?.name).toBe('a');
    expect(result.warnings.map((problem) => [problem.code, problem.line])).toEqual([
      ['lenient_parse', 3],
      ['lenient_parse', 3],
    ]);
  });

  it('reports the YAML error when no `key: value` line can be read at all', () => {
    const result = parseDefinition('---\n  [unclosed\n---\nbody', FILE, compat);
    expect(result.definition).toBeUndefined();
    expect(result.errors[0]).toMatchObject({ code: 'parse_error', line: 2 });
  });

  it('can be asked for explicitly for any source', () => {
    const result = parseDefinition('---\nname: a\ndescription: x: y\n---\nbody', FILE, { mode: 'lenient' });
    expect(result.definition?.description).toBe('x: y');
  });
});
