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

  it('locates an unclosed bracket or quote where it opens, in both modes', () => {
    const text = '---\nname: a\ndescription: [unclosed\ntools: Read\n---\nbody';
    const lenient = parseDefinition(text, FILE, compat);
    expect(lenient.definition).toMatchObject({ description: '[unclosed', tools: ['Read'] });
    expect(lenient.warnings).toMatchObject([{ code: 'lenient_parse', line: 3, column: 14 }]);
    expect(lenient.warnings[0]?.message).toContain('expected a `]` to close the `[` that opens here');
    const strict = parseDefinition(text, FILE, { source: 'project' });
    expect(strict.errors).toMatchObject([{ code: 'parse_error', line: 3, column: 14 }]);
    const quoted = parseDefinition('---\nname: a\ndescription: "open\ntools: Read\n---\nbody', FILE, {
      source: 'project',
    });
    expect(quoted.errors).toMatchObject([{ code: 'parse_error', line: 3, column: 14 }]);
    expect(quoted.errors[0]?.message).toContain('expected a `"` to close the `"` that opens here');
  });

  it('reads a known key indented with a tab as a top-level key, with a warning at the key', () => {
    const result = parseDefinition(
      '---\nname: tabs\n\tdescription: tab indented\ntools: Read\n---\nb',
      FILE,
      compat,
    );
    expect(result.errors).toEqual([]);
    expect(result.definition).toMatchObject({ name: 'tabs', description: 'tab indented', tools: ['Read'] });
    expect(result.warnings).toContainEqual(
      expect.objectContaining({ code: 'lenient_parse', line: 3, column: 2, path: '/description' }),
    );
    // After a value on its own line only: a tab-indented `Example:` inside a text stays text, and
    // under `hooks:` (no value on its line) an indented known key is nested content.
    const text = parseDefinition(
      '---\nname: a\ndescription: Use when\n\tExample: the user asks\n\tmodel: opus\n---\nb',
      FILE,
      compat,
    );
    expect(text.definition).toMatchObject({ description: 'Use when\nExample: the user asks', model: 'opus' });
    const nested = parseDefinition('---\nname: a\ndescription: d\nhooks:\n\tmodel: x\n---\nb', FILE, compat);
    expect(nested.definition?.model).toBe('default');
    expect(nested.definition?.extra).toMatchObject({ hooks: { model: 'x' } });
  });

  it('reads tab-indented list items as a list, with positions in the file', () => {
    const result = parseDefinition(
      '---\nname: a\ndescription: d\ntools:\n\t- Read\n\t- Grep\n---\nb',
      FILE,
      compat,
    );
    expect(result.definition?.tools).toEqual(['Read', 'Grep']);
    const bad = parseDefinition(
      '---\nname: a\ndescription: d\n\ttools:\n\t\t- Read\n\t\t- {a: 1}\n---\nb',
      FILE,
      compat,
    );
    expect(bad.errors).toMatchObject([{ code: 'invalid_field', line: 6, column: 5 }]);
  });
});
