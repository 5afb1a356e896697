/** Definition keys that refer to blocks and hold model settings: what validation reports, and where. */
import { describe, expect, it } from 'vitest';
import { parseDefinition } from '../../src/definition/load.ts';

const FILE = '/project/.troupe/agents/a.md';

/** Parses a definition whose frontmatter starts at line 2 (line 1 is the fence). */
function parse(lines: readonly string[], body = '') {
  return parseDefinition(`---\nname: a\ndescription: A.\n${lines.join('\n')}\n---\n${body}`, FILE);
}

function problemsOf(lines: readonly string[], body = 'Body.\n') {
  const result = parse(lines, body);
  return [...result.errors, ...result.warnings].map(({ severity, code, path, line, column }) => ({
    severity,
    code,
    path,
    line,
    column,
  }));
}

describe('block references', () => {
  it('reads a prompt block, settings blocks and a model-settings block with inline keys over it', () => {
    const { definition, errors } = parse([
      'instructions: { prompt: acme.intake, version: ^1, parameters: { queue: billing } }',
      'settings:',
      '  - { id: acme.weights, version: ^1.2.0 }',
      '  - { id: acme.limits, version: 2 }',
      'modelSettings: { id: acme.fast, version: ~1.0, temperature: 0 }',
    ]);
    expect(errors).toEqual([]);
    expect(definition).toMatchObject({
      instructions: { id: 'acme.intake', version: '^1', parameters: { queue: 'billing' } },
      settings: [
        { id: 'acme.weights', version: '^1.2.0' },
        { id: 'acme.limits', version: '2' },
      ],
      modelSettingsBlock: { id: 'acme.fast', version: '~1.0' },
      modelSettings: { temperature: 0 },
    });
    expect(definition?.sourcePositions?.['/settings/1/id']).toEqual({ line: 7, column: 11 });
  });

  it('reports a bad id at the id, with its JSON pointer', () => {
    expect(
      problemsOf(
        [
          'settings:',
          '  - { id: Acme.Weights, version: ^1 }',
          'instructions: { prompt: intake, version: ^1 }',
        ],
        '',
      ),
    ).toEqual([
      { severity: 'error', code: 'invalid_block_id', path: '/instructions/prompt', line: 6, column: 25 },
      { severity: 'error', code: 'invalid_block_id', path: '/settings/0/id', line: 5, column: 11 },
    ]);
  });

  it('reports a bad or missing semver range at the version', () => {
    expect(
      problemsOf([
        'settings:',
        '  - { id: acme.a, version: latest }',
        '  - { id: acme.b }',
        'modelSettings: { id: acme.c, version: "^1..2" }',
      ]),
    ).toEqual([
      { severity: 'error', code: 'invalid_version_range', path: '/settings/0/version', line: 5, column: 28 },
      { severity: 'error', code: 'invalid_version_range', path: '/settings/1/version', line: 6, column: 5 },
      {
        severity: 'error',
        code: 'invalid_version_range',
        path: '/modelSettings/version',
        line: 7,
        column: 39,
      },
    ]);
  });

  it('reports a block referenced twice at the second reference', () => {
    const result = parse([
      'instructions: { prompt: acme.x, version: ^1 }',
      'settings:',
      '  - { id: acme.w, version: ^1 }',
      '  - { id: acme.w, version: ^2 }',
      'modelSettings: { id: acme.x, version: ^1 }',
    ]);
    expect(result.errors.map(({ code, path, line, column }) => ({ code, path, line, column }))).toEqual([
      { code: 'duplicate_block', path: '/settings/1/id', line: 7, column: 11 },
      { code: 'duplicate_block', path: '/modelSettings/id', line: 8, column: 22 },
    ]);
    expect(result.errors[0]?.message).toBe(
      'Expected each block to be referenced once, found `acme.w` again (first at /settings/0/id)',
    );
  });

  it('refuses instructions and a body together, and does not ask for a body with instructions', () => {
    expect(problemsOf(['instructions: { prompt: acme.x, version: ^1 }'], 'A body.\n')).toEqual([
      { severity: 'error', code: 'invalid_field', path: '/instructions', line: 4, column: 1 },
    ]);
    expect(problemsOf(['instructions: { prompt: acme.x, version: ^1 }'], '')).toEqual([]);
  });

  it('checks inline model settings: bad values are errors, unknown keys warnings', () => {
    expect(
      problemsOf(['modelSettings:', '  temperature: 7', '  reasoningEffort: high', '  top_p: 0.5']),
    ).toEqual([
      { severity: 'error', code: 'invalid_field', path: '/modelSettings/temperature', line: 5, column: 16 },
      { severity: 'warning', code: 'unknown_key', path: '/modelSettings/top_p', line: 7, column: 3 },
    ]);
    expect(parse(['modelSettings: { reasoningEffort: high, stop: END }']).definition?.modelSettings).toEqual({
      reasoningEffort: 'high',
      stop: ['END'],
    });
  });

  it('keeps the file text for pinning, and leaves it and the location out of the hash', async () => {
    const { definitionHash } = await import('../../src/definition/load.ts');
    const one = parse(['modelSettings: { temperature: 0.5 }'], 'Body.\n').definition;
    const spaced = parseDefinition(
      '---\n\nname:   a\ndescription: A.\nmodelSettings: {temperature: 0.5}\n---\n\nBody.\n',
      '/elsewhere/a.md',
    ).definition;
    if (!one || !spaced) throw new Error('expected definitions');
    expect(one.text).toContain('modelSettings: { temperature: 0.5 }');
    expect(definitionHash(spaced)).toBe(definitionHash(one));
    const hotter = parse(['modelSettings: { temperature: 0.6 }'], 'Body.\n').definition;
    if (!hotter) throw new Error('expected a definition');
    expect(definitionHash(hotter)).not.toBe(definitionHash(one));
  });
});
