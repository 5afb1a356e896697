// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${{ }}` is troupe's template syntax, not a mistaken JS placeholder.
/** Block stores: the file-backed one (discovery, precedence, formats) and the ones apps build in code. */
import { afterEach, describe, expect, it } from 'vitest';
import { discoverBlocks, fileBlockStore } from '../../src/blocks/file-store.ts';
import { highestSatisfying, isBlockId, isVersionRange } from '../../src/blocks/ids.ts';
import { functionBlockStore, memoryBlockStore } from '../../src/blocks/memory-store.ts';
import { blockHash, parseBlockText } from '../../src/blocks/parse.ts';
import { TempTree } from '../definition/helpers.ts';

let tree: TempTree;
afterEach(() => tree?.remove());

describe('block ids and ranges', () => {
  it('accepts dotted lowercase ids only', () => {
    for (const id of ['acme.intake', 'team-a.weights.v2', 'a1.b_c']) expect(isBlockId(id), id).toBe(true);
    for (const id of [
      'intake',
      'Acme.Intake',
      'acme..intake',
      '.acme',
      'acme.',
      'acme/intake',
      '../x.y',
      'a.b c',
    ])
      expect(isBlockId(id), id).toBe(false);
  });

  it('accepts semver ranges and exact versions, nothing else', () => {
    for (const range of ['^1', '^1.2.0', '~1.4', '1.2.3', '>=2 <3', '1.x', '*'])
      expect(isVersionRange(range), range).toBe(true);
    for (const range of ['', 'latest', 'v1.2.3.4', '1.2.3.4', '>>1'])
      expect(isVersionRange(range), range).toBe(false);
  });

  it('picks the highest version in the range, and a pre-release only when the range names one', () => {
    const versions = ['1.0.0', '1.2.0', '1.10.1', '2.0.0', '1.11.0-beta.1'];
    expect(highestSatisfying(versions, '^1')).toBe('1.10.1');
    expect(highestSatisfying(versions, '~1.2')).toBe('1.2.0');
    expect(highestSatisfying(versions, '^1.11.0-beta.0')).toBe('1.11.0-beta.1');
    expect(highestSatisfying(versions, '^3')).toBeUndefined();
  });
});

describe('block files', () => {
  it('reads a prompt block with declared parameters and where its template starts', () => {
    const text =
      '---\ndescription: Intake\nparameters:\n  queue: { description: Which queue }\n  tone:\n    default: calm\n---\n\nTriage ${{ queue }}.\n';
    const { block, errors } = parseBlockText(text, {
      kind: 'prompt',
      id: 'acme.intake',
      version: '1.0.0',
      file: '/b/1.0.0.md',
    });
    expect(errors).toEqual([]);
    expect(block).toEqual({
      kind: 'prompt',
      id: 'acme.intake',
      version: '1.0.0',
      source: '/b/1.0.0.md',
      description: 'Intake',
      text: 'Triage ${{ queue }}.',
      textLine: 9,
      parameters: { queue: { description: 'Which queue' }, tone: { default: 'calm' } },
    });
  });

  it('reads a prompt block without frontmatter as a template with no parameters', () => {
    const { block } = parseBlockText('\nJust do it.\n', {
      kind: 'prompt',
      id: 'a.b',
      version: '1.0.0',
      file: 'f',
    });
    expect(block).toMatchObject({ text: 'Just do it.', textLine: 2, parameters: {} });
  });

  it('refuses parameter names a template cannot read or troupe already uses, at their line', () => {
    const { errors } = parseBlockText('---\nparameters: [ok, tools, 9lives]\n---\nx\n', {
      kind: 'prompt',
      id: 'a.b',
      version: '1.0.0',
      file: 'f',
    });
    expect(errors.map((problem) => [problem.path, problem.line])).toEqual([
      ['/parameters/1', 2],
      ['/parameters/2', 2],
    ]);
  });

  it('refuses a parameter listed twice, at the second', () => {
    const { block, errors } = parseBlockText('---\nparameters:\n  - a\n  - b\n  - a\n---\n${{ a }}\n', {
      kind: 'prompt',
      id: 'a.b',
      version: '1.0.0',
      file: 'f',
    });
    expect(block).toBeUndefined();
    expect(errors).toEqual([
      expect.objectContaining({ code: 'duplicate_parameter', path: '/parameters/2', line: 5, column: 5 }),
    ]);
    expect(errors[0]?.message).toContain('`a` again (first at /parameters/0)');
  });

  it('calls a YAML error in a settings file an error in that file, not in a frontmatter', () => {
    for (const kind of ['settings', 'modelSettings'] as const) {
      const { errors } = parseBlockText('a: 1\nb: [1, 2\n', { kind, id: 'a.b', version: '1.0.0', file: 'f' });
      const what = kind === 'settings' ? 'settings file' : 'model-settings file';
      expect(errors).toEqual([expect.objectContaining({ code: 'parse_error', line: 2, column: 4 })]);
      expect(errors[0]?.message).toMatch(new RegExp(`^Invalid YAML in ${what}: `));
      const list = parseBlockText('- 1\n', { kind, id: 'a.b', version: '1.0.0', file: 'f' });
      expect(list.errors.map((problem) => [problem.message, problem.line])).toEqual([
        [`Expected the ${what} to be \`key: value\` lines, found a list`, 1],
      ]);
    }
  });

  it('reads model settings blocks with the model-settings rules, located in the file', () => {
    const { block, errors, warnings } = parseBlockText('temperature: 0.2\nmaxOutputTokens: 0\nfoo: 1\n', {
      kind: 'modelSettings',
      id: 'acme.fast',
      version: '1.0.0',
      file: 'f',
    });
    expect(block).toBeUndefined();
    expect(errors).toEqual([
      expect.objectContaining({ code: 'invalid_field', path: '/maxOutputTokens', line: 2, column: 18 }),
    ]);
    expect(warnings).toEqual([expect.objectContaining({ code: 'unknown_key', path: '/foo', line: 3 })]);
  });

  it('hashes content, not location', () => {
    const read = (file: string) =>
      parseBlockText('urgency: 0.7\n', { kind: 'settings', id: 'a.b', version: '1.0.0', file }).block;
    const one = read('/one/1.0.0.yaml');
    const two = read('/two/1.0.0.yaml');
    if (!one || !two) throw new Error('expected blocks');
    expect(blockHash(one)).toBe(blockHash(two));
    const other = parseBlockText('urgency: 0.8\n', {
      kind: 'settings',
      id: 'a.b',
      version: '1.0.0',
      file: 'x',
    }).block;
    expect(other && blockHash(other)).not.toBe(blockHash(one));
  });
});

describe('fileBlockStore', () => {
  it('finds versions in the closest directory that has the id, and reads each format for its kind', async () => {
    tree = new TempTree();
    tree.mkdir('repo/.git');
    tree.write('repo/.troupe/blocks/acme.intake/1.0.0.md', 'Root one.\n');
    tree.write('repo/.troupe/blocks/acme.intake/1.3.0.md', 'Root three.\n');
    tree.write('repo/sub/.troupe/blocks/acme.intake/1.1.0.md', 'Closer.\n');
    tree.write('repo/.troupe/blocks/acme.weights/1.0.0.yaml', 'urgency: 0.5\n');
    tree.write('home/.troupe/blocks/acme.weights/9.0.0.yaml', 'urgency: 9\n');
    tree.write('home/.troupe/blocks/user.only/1.0.0.yaml', 'x: 1\n');
    const store = fileBlockStore({ cwd: tree.path('repo/sub'), home: tree.path('home') });
    expect(await store.versions('prompt', 'acme.intake')).toEqual(['1.1.0']);
    expect(await store.versions('settings', 'acme.weights')).toEqual(['1.0.0']);
    expect(await store.versions('settings', 'user.only')).toEqual(['1.0.0']);
    expect(await store.versions('prompt', 'acme.weights')).toEqual([]);
    expect(await store.read('settings', 'acme.weights', '1.0.0')).toMatchObject({ values: { urgency: 0.5 } });
    expect(await store.read('prompt', 'acme.intake', '1.3.0')).toBeUndefined();
    expect(await store.versions('prompt', '../../etc')).toEqual([]);
  });

  it('sees a version published after the store was made', async () => {
    tree = new TempTree();
    tree.write('p/.troupe/blocks/acme.intake/1.0.0.md', 'One.\n');
    const store = fileBlockStore({ cwd: tree.path('p'), home: tree.path('home') });
    expect(await store.versions('prompt', 'acme.intake')).toEqual(['1.0.0']);
    tree.write('p/.troupe/blocks/acme.intake/1.1.0.md', 'Two.\n');
    expect(await store.versions('prompt', 'acme.intake')).toEqual(['1.1.0', '1.0.0']);
  });

  it('throws invalid_block with the problems of a block file that does not read', async () => {
    tree = new TempTree();
    tree.write('p/.troupe/blocks/acme.w/1.0.0.yaml', 'a: [1,\n');
    const store = fileBlockStore({ cwd: tree.path('p'), home: tree.path('home') });
    await expect(store.read('settings', 'acme.w', '1.0.0')).rejects.toMatchObject({
      code: 'invalid_block',
      fields: {
        problems: [
          expect.objectContaining({
            code: 'parse_error',
            file: tree.path('p/.troupe/blocks/acme.w/1.0.0.yaml'),
          }),
        ],
      },
    });
  });

  it('lists blocks with their versions and shadowed directories, and warns about stray names', async () => {
    tree = new TempTree();
    tree.write('p/.troupe/blocks/acme.intake/1.0.0.md', 'A\n');
    tree.write('p/.troupe/blocks/acme.intake/2.0.0.md', 'B\n');
    tree.write('p/.troupe/blocks/acme.intake/notes.md', 'C\n');
    tree.write('p/.troupe/blocks/NotAnId/1.0.0.md', 'D\n');
    tree.write('p/.troupe/blocks/acme.intake/1.1.0.yml', 'k: v\n');
    tree.write('home/.troupe/blocks/acme.intake/3.0.0.md', 'E\n');
    const found = await discoverBlocks({ cwd: tree.path('p'), home: tree.path('home') });
    expect(found.blocks).toEqual([
      expect.objectContaining({
        id: 'acme.intake',
        format: 'md',
        source: 'project',
        versions: [
          { version: '2.0.0', path: tree.path('p/.troupe/blocks/acme.intake/2.0.0.md') },
          { version: '1.0.0', path: tree.path('p/.troupe/blocks/acme.intake/1.0.0.md') },
        ],
        shadows: [tree.path('home/.troupe/blocks/acme.intake')],
      }),
    ]);
    expect(found.problems.map((problem) => problem.file)).toEqual([
      tree.path('p/.troupe/blocks/NotAnId'),
      tree.path('p/.troupe/blocks/acme.intake/1.1.0.yml'),
      tree.path('p/.troupe/blocks/acme.intake/notes.md'),
    ]);
    expect(found.problems[1]?.message).toBe(
      'Expected a block file ending in .md (a prompt block) or .yaml (a settings or model-settings block), found `1.1.0.yml`; rename it `1.1.0.yaml`',
    );
  });
});

describe('blocks given in code', () => {
  it('memoryBlockStore takes a list or a Map and refuses bad or duplicate blocks', async () => {
    const prompt = {
      kind: 'prompt',
      id: 'acme.intake',
      version: '1.0.0',
      text: 'Hi ${{ who }}',
      parameters: ['who'],
    } as const;
    const store = memoryBlockStore(new Map([['p', prompt]]));
    expect(await store.versions('prompt', 'acme.intake')).toEqual(['1.0.0']);
    expect(await store.read('prompt', 'acme.intake', '1.0.0')).toMatchObject({
      parameters: { who: {} },
      source: 'memory:acme.intake@1.0.0',
    });
    expect(() => memoryBlockStore([prompt, prompt])).toThrow(
      expect.objectContaining({ code: 'duplicate_block' }),
    );
    expect(() => memoryBlockStore([{ ...prompt, parameters: ['who', 'who'] }])).toThrow(
      expect.objectContaining({ code: 'invalid_block', message: expect.stringContaining('`who` again') }),
    );
    expect(() => memoryBlockStore([{ ...prompt, id: 'intake' }])).toThrow(
      expect.objectContaining({ code: 'invalid_block' }),
    );
    expect(() => memoryBlockStore([{ ...prompt, version: '^1' }])).toThrow(
      expect.objectContaining({ code: 'invalid_block' }),
    );
    expect(() =>
      memoryBlockStore([
        { kind: 'modelSettings', id: 'a.b', version: '1.0.0', settings: { temperature: 9 } },
      ]),
    ).toThrow(expect.objectContaining({ code: 'invalid_block' }));
  });

  it('functionBlockStore asks the lookup each time and checks what it returns', async () => {
    let published = ['1.0.0'];
    const asked: string[] = [];
    const store = functionBlockStore((kind, id) => {
      asked.push(`${kind}:${id}`);
      return published.map((version) => ({ kind: 'settings' as const, id, version, values: { version } }));
    });
    expect(await store.versions('settings', 'acme.w')).toEqual(['1.0.0']);
    published = ['1.0.0', '1.1.0'];
    expect(await store.read('settings', 'acme.w', '1.1.0')).toMatchObject({ values: { version: '1.1.0' } });
    expect(asked).toEqual(['settings:acme.w', 'settings:acme.w']);
    const wrong = functionBlockStore(() => [
      { kind: 'settings', id: 'other.id', version: '1.0.0', values: {} },
    ]);
    await expect(wrong.versions('settings', 'acme.w')).rejects.toMatchObject({ code: 'invalid_block' });
  });
});
