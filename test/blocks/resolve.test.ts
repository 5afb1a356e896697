// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${{ }}` is troupe's template syntax, not a mistaken JS placeholder.
/** Resolving a definition's block references: one version per range, every problem located. */
import { afterEach, describe, expect, it } from 'vitest';
import { fileBlockStore } from '../../src/blocks/file-store.ts';
import { memoryBlockStore } from '../../src/blocks/memory-store.ts';
import { blockHash } from '../../src/blocks/parse.ts';
import { resolveAgentBlocks, resolveBlocks } from '../../src/blocks/resolve.ts';
import type { BlockInput } from '../../src/blocks/types.ts';
import { parseDefinition } from '../../src/definition/load.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { TempTree } from '../definition/helpers.ts';

const FILE = '/project/.troupe/agents/a.md';

function definition(lines: readonly string[]): AgentDefinition {
  const result = parseDefinition(`---\nname: a\ndescription: A.\n${lines.join('\n')}\n---\n`, FILE);
  if (!result.definition) throw new Error(JSON.stringify(result.errors));
  return result.definition;
}

const BLOCKS: readonly BlockInput[] = [
  { kind: 'prompt', id: 'acme.intake', version: '1.0.0', text: 'Old ${{ queue }}', parameters: ['queue'] },
  {
    kind: 'prompt',
    id: 'acme.intake',
    version: '1.4.0',
    text: 'New ${{ queue }} ${{ tone }}',
    parameters: { queue: {}, tone: { default: 'calm' } },
  },
  { kind: 'prompt', id: 'acme.intake', version: '2.0.0', text: 'Next', parameters: [] },
  { kind: 'settings', id: 'acme.weights', version: '1.2.0', values: { urgency: 0.5 } },
  { kind: 'settings', id: 'acme.weights', version: '1.3.1', values: { urgency: 0.7 } },
  {
    kind: 'modelSettings',
    id: 'acme.fast',
    version: '1.0.0',
    settings: { temperature: 0.1, maxOutputTokens: 99 },
  },
];
const store = memoryBlockStore(BLOCKS);

let tree: TempTree | undefined;
afterEach(() => tree?.remove());

describe('resolveBlocks', () => {
  it('resolves each range to the highest matching version and pins it with its hash', async () => {
    const def = definition([
      'instructions: { prompt: acme.intake, version: ^1, parameters: { queue: billing } }',
      'settings: [{ id: acme.weights, version: ^1.2.0 }]',
      'modelSettings: { id: acme.fast, version: 1.0.0 }',
    ]);
    const { blocks, problems } = await resolveBlocks(def, store);
    expect(problems).toEqual([]);
    const hashOf = async (kind: 'prompt' | 'settings' | 'modelSettings', id: string, version: string) => {
      const block = await store.read(kind, id, version);
      if (!block) throw new Error('missing');
      return blockHash(block);
    };
    expect(blocks).toEqual({
      pinned: [
        {
          kind: 'prompt',
          id: 'acme.intake',
          range: '^1',
          version: '1.4.0',
          hash: await hashOf('prompt', 'acme.intake', '1.4.0'),
        },
        {
          kind: 'settings',
          id: 'acme.weights',
          range: '^1.2.0',
          version: '1.3.1',
          hash: await hashOf('settings', 'acme.weights', '1.3.1'),
        },
        {
          kind: 'modelSettings',
          id: 'acme.fast',
          range: '1.0.0',
          version: '1.0.0',
          hash: await hashOf('modelSettings', 'acme.fast', '1.0.0'),
        },
      ],
      prompt: {
        text: 'New ${{ queue }} ${{ tone }}',
        source: 'memory:acme.intake@1.4.0',
        textLine: 1,
        parameters: { queue: 'billing', tone: 'calm' },
      },
      settings: { 'acme.weights': { urgency: 0.7 } },
      modelSettings: { temperature: 0.1, maxOutputTokens: 99 },
    });
  });

  it('reports block_unresolvable at the reference for a missing block and for a range nothing satisfies', async () => {
    const def = definition([
      'settings:',
      '  - { id: acme.nothing, version: ^1 }',
      '  - { id: acme.weights, version: ^2 }',
    ]);
    const { blocks, problems } = await resolveBlocks(def, store);
    expect(blocks).toBeUndefined();
    expect(
      problems.map(({ code, file, path, line, column }) => ({ code, file, path, line, column })),
    ).toEqual([
      { code: 'block_unresolvable', file: FILE, path: '/settings/0/id', line: 5, column: 11 },
      { code: 'block_unresolvable', file: FILE, path: '/settings/1/version', line: 6, column: 34 },
    ]);
    expect(problems[0]?.message).toContain('found none (searched 6 block(s) given in code)');
    expect(problems[1]?.message).toBe(
      'Expected a version of settings block `acme.weights` that satisfies `^2`, found only 1.3.1, 1.2.0',
    );
  });

  it('reports parameters the block does not declare, and declared ones without a default that are missing', async () => {
    const extra = definition([
      'instructions: { prompt: acme.intake, version: ^1, parameters: { queue: a, colour: red } }',
    ]);
    const found = await resolveBlocks(extra, store);
    expect(found.problems.map(({ code, path }) => ({ code, path }))).toEqual([
      { code: 'unknown_parameter', path: '/instructions/parameters/colour' },
    ]);
    expect(found.problems[0]?.message).toContain('(queue, tone)');
    const none = definition([
      'instructions: { prompt: acme.intake, version: 2.0.0, parameters: { queue: a } }',
    ]);
    expect((await resolveBlocks(none, store)).problems[0]?.message).toContain('it declares none');
    const missing = definition(['instructions: { prompt: acme.intake, version: ~1.4 }']);
    const problems = (await resolveBlocks(missing, store)).problems;
    expect(problems.map(({ code, path, line }) => ({ code, path, line }))).toEqual([
      { code: 'missing_parameter', path: '/instructions', line: 4 },
    ]);
  });

  it('reports a block file that does not read, in the block file and at the reference', async () => {
    tree = new TempTree();
    tree.write('p/.troupe/blocks/acme.fast/1.0.0.yaml', 'temperature: hot\n');
    const def = definition(['modelSettings: { id: acme.fast, version: ^1 }']);
    const found = await resolveBlocks(def, fileBlockStore({ cwd: tree.path('p'), home: tree.path('home') }));
    expect(found.problems.map(({ code, file, line, column }) => ({ code, file, line, column }))).toEqual([
      {
        code: 'invalid_field',
        file: tree.path('p/.troupe/blocks/acme.fast/1.0.0.yaml'),
        line: 1,
        column: 14,
      },
      { code: 'invalid_block', file: FILE, line: 4, column: 22 },
    ]);
  });

  it('resolveAgentBlocks throws the first problem as a UserError listing file:line:column of each', async () => {
    const def = definition(['settings: [{ id: acme.nothing, version: ^1 }]']);
    await expect(resolveAgentBlocks(def, store)).rejects.toMatchObject({
      name: 'UserError',
      code: 'block_unresolvable',
      message: expect.stringMatching(
        /^\/project\/\.troupe\/agents\/a\.md:4:18: Expected settings block `acme\.nothing`/,
      ),
      fields: { problems: [expect.objectContaining({ code: 'block_unresolvable', path: '/settings/0/id' })] },
    });
  });
});
