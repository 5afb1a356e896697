import { execFileSync } from 'node:child_process';
import { closeSync, openSync, symlinkSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BUILTIN_DEFINITIONS, loadBuiltins } from '../../src/definition/builtins.ts';
import { DEFINITION_BYTE_LIMIT, MAX_FRONTMATTER_CHARS } from '../../src/definition/constants.ts';
import { definitionHash, loadDefinitionFile, parseDefinition } from '../../src/definition/load.ts';
import { formatProblem, jsonPointer } from '../../src/definition/problems.ts';
import { canonicalJson } from '../../src/journal/canonical-json.ts';
import { definitionText, TempTree } from './helpers.ts';

/** Whether `file` can be opened for reading here. */
function readable(file: string): boolean {
  try {
    closeSync(openSync(file, 'r'));
    return true;
  } catch {
    return false;
  }
}

let tree: TempTree;
beforeEach(() => {
  tree = new TempTree();
});
afterEach(() => tree.remove());

describe('loadDefinitionFile', () => {
  it('loads a file and records its absolute path', async () => {
    const file = tree.write('a.md', definitionText('a'));
    const result = await loadDefinitionFile(file);
    expect(result).toMatchObject({
      definition: { name: 'a', path: file, source: 'project' },
      errors: [],
      warnings: [],
    });
  });

  it('turns a missing file into io_error instead of throwing', async () => {
    const result = await loadDefinitionFile(tree.path('missing.md'));
    expect(result.definition).toBeUndefined();
    expect(result.errors).toMatchObject([
      { code: 'io_error', file: tree.path('missing.md'), line: 1, column: 1 },
    ]);
    expect(result.errors[0]?.message).toContain('ENOENT');
  });

  it('turns a directory and an oversized file into io_error', async () => {
    expect((await loadDefinitionFile(tree.mkdir('dir.md'))).errors).toMatchObject([{ code: 'io_error' }]);
    const big = tree.write('big.md', `${definitionText('big')}${'x'.repeat(DEFINITION_BYTE_LIMIT)}`);
    expect((await loadDefinitionFile(big)).errors[0]?.message).toContain(
      `at most ${DEFINITION_BYTE_LIMIT} bytes`,
    );
  });

  // A /proc file's stat says 0 bytes: as a file that grows after it was measured, only reading
  // with the bound holds it (it was read whole, 5 MB of kernel symbols parsed as a definition).
  it.runIf(readable('/proc/kallsyms'))(
    'reads no more than the bound of a file whose size stat does not tell',
    async () => {
      const link = tree.path('kallsyms.md');
      symlinkSync('/proc/kallsyms', link);
      const result = await loadDefinitionFile(link);
      expect(result.errors).toEqual([
        expect.objectContaining({
          code: 'io_error',
          file: link,
          message: `Expected a definition file of at most ${DEFINITION_BYTE_LIMIT} bytes, found more (troupe reads no further)`,
        }),
      ]);
    },
  );

  it.runIf(process.platform !== 'win32')(
    'reports a FIFO as no regular file without waiting for a writer',
    async () => {
      const fifo = tree.path('fifo.md');
      execFileSync('mkfifo', [fifo]);
      const result = await loadDefinitionFile(fifo);
      expect(result.errors).toMatchObject([
        { code: 'io_error', message: 'Expected a definition file, found no regular file' },
      ]);
    },
  );

  it('reads a file that is not UTF-8 with a warning at the first bad byte', async () => {
    const file = tree.path('latin1.md');
    const bytes = Buffer.concat([
      Buffer.from('---\nname: l\ndescription: caf'),
      Buffer.from([0xe9, 0x20, 0xff]),
      Buffer.from('\n---\nbody\n'),
    ]);
    writeFileSync(file, bytes);
    const result = await loadDefinitionFile(file);
    expect(result.definition?.description).toBe('caf\uFFFD \uFFFD');
    expect(result.warnings).toEqual([
      expect.objectContaining({
        code: 'invalid_utf8',
        severity: 'warning',
        file,
        line: 3,
        column: 17,
        message: expect.stringContaining('Expected UTF-8 text, found bytes that are not UTF-8'),
      }),
    ]);
  });

  it('is lenient for compat sources unless told otherwise', async () => {
    const file = tree.write('c.md', '---\nname: c\ndescription: Use: now\n---\nbody\n');
    expect((await loadDefinitionFile(file, { source: 'compat' })).definition?.description).toBe('Use: now');
    expect((await loadDefinitionFile(file, { source: 'compat', mode: 'strict' })).errors[0]?.code).toBe(
      'parse_error',
    );
  });

  it('keeps the name of a definition that has errors', () => {
    const result = parseDefinition('---\nname: a\nmaxSteps: 0\n---\nbody', '/a.md');
    expect(result.definition).toBeUndefined();
    expect(result.name).toBe('a');
  });

  it('refuses a frontmatter longer than the cap', () => {
    const text = `---\nname: a\ndescription: ${'x'.repeat(MAX_FRONTMATTER_CHARS)}\n---\nbody`;
    expect(parseDefinition(text, '/a.md').errors).toMatchObject([{ code: 'parse_error', line: 1 }]);
  });

  it('refuses absurdly deep flow nesting at the bracket that goes too deep', () => {
    const text = `---\nname: a\ndescription: d\ndeep: ${'['.repeat(100)}\n---\nbody`;
    expect(parseDefinition(text, '/a.md').errors).toMatchObject([
      { code: 'parse_error', line: 4, column: 71 },
    ]);
  });
});

describe('block nesting on one line', () => {
  it('is refused past 64 levels at the indicator that goes too deep, not as a stack overflow', () => {
    for (const indicator of ['- ', '? ']) {
      const text = `---\nname: a\ndescription: d\ntools:\n${indicator.repeat(30_000)}x\n---\nbody`;
      expect(parseDefinition(text, '/a.md').errors).toEqual([
        expect.objectContaining({
          code: 'parse_error',
          line: 5,
          column: 129,
          message:
            'Invalid YAML in frontmatter: expected `- `/`? `/`: ` nested at most 64 levels deep on one line, found deeper nesting',
        }),
      ]);
    }
    const fine = `---\nname: a\ndescription: d\nx:\n${'- '.repeat(64)}y\n---\nbody`;
    expect(parseDefinition(fine, '/a.md').errors).toEqual([]);
  });
});

describe('a long tools list', () => {
  it('is located in one pass over its items, not one search per name', () => {
    const count = 2000;
    const names = Array.from({ length: count }, (_, i) => `mcp__s__t${i}`);
    const text = `---\nname: a\ndescription: d\ntools: [${names.join(', ')}]\n---\nbody`;
    const trim = vi.spyOn(String.prototype, 'trim');
    try {
      const result = parseDefinition(text, '/a.md');
      expect(result.errors).toEqual([]);
      expect(result.definition?.tools).toHaveLength(count);
      // A search per name trimmed ~count²/2 items (2,000,000 here).
      expect(trim.mock.calls.length).toBeLessThan(20 * count);
    } finally {
      trim.mockRestore();
    }
  });
});

describe('definitionHash', () => {
  it('is the same wherever the file lives and changes with the content', () => {
    const one = parseDefinition(definitionText('a'), '/x/a.md').definition;
    const moved = parseDefinition(`\n\n${definitionText('a')}`, '/y/a.md', { source: 'user' }).definition;
    const changed = parseDefinition(definitionText('a', 'maxSteps: 3\n'), '/x/a.md').definition;
    if (!one || !moved || !changed) throw new Error('expected definitions');
    expect(definitionHash(one)).toMatch(/^[0-9a-f]{64}$/);
    expect(definitionHash(moved)).toBe(definitionHash(one));
    expect(definitionHash(changed)).not.toBe(definitionHash(one));
  });

  it('tells "all tools" from "no tools"', () => {
    const all = parseDefinition(definitionText('a'), '/a.md').definition;
    const none = parseDefinition(definitionText('a', 'tools: []\n'), '/a.md').definition;
    if (!all || !none) throw new Error('expected definitions');
    expect(definitionHash(all)).not.toBe(definitionHash(none));
  });

  it('serialises canonically: sorted keys, undefined left out', () => {
    expect(canonicalJson({ b: 1, a: [undefined, { d: undefined, c: 'x' }] })).toBe(
      '{"a":[null,{"c":"x"}],"b":1}',
    );
  });
});

describe('built-in agents', () => {
  it('all load strictly without problems', () => {
    for (const result of loadBuiltins()) {
      expect(result.errors).toEqual([]);
      expect(result.warnings).toEqual([]);
    }
    expect(Object.keys(BUILTIN_DEFINITIONS)).toEqual(['general-purpose', 'worker']);
  });

  it('the worker must finish with complete_task, with a reminder', () => {
    const worker = loadBuiltins().find((result) => result.name === 'worker')?.definition;
    expect(worker).toMatchObject({ source: 'builtin', path: 'builtin:worker' });
    expect(worker?.completionRequirement?.tool).toBe('complete_task');
    expect(worker?.completionRequirement?.reminder).toContain('complete_task');
  });

  it('checks tool references of built-ins against a registry when given one', () => {
    const results = loadBuiltins(new Set(['complete_task']));
    expect(results.flatMap((result) => result.errors)).toEqual([]);
  });
});

describe('problem formatting', () => {
  it('prints file:line:column: severity code: message (path)', () => {
    const [problem] = parseDefinition('---\nname: a\ndescription: d\nmaxSteps: 0\n---\nx', '/a.md').errors;
    if (!problem) throw new Error('expected a problem');
    expect(formatProblem(problem, 'a.md')).toBe(
      'a.md:4:11: error invalid_field: Expected `maxSteps` to be a positive integer, got `0` (number) (/maxSteps)',
    );
  });

  it('escapes JSON pointer segments', () => {
    expect(jsonPointer(['a/b', 'c~d', 0])).toBe('/a~1b/c~0d/0');
  });
});
