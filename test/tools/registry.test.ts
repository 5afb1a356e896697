import { describe, expect, it } from 'vitest';
import { hasErrorCode } from '../../src/errors.ts';
import { builtinTools, createToolRegistry } from '../../src/tools/builtin/index.ts';
import { declareCompleteTask, declareWaitForInstruction } from '../../src/tools/builtin/orchestration.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { compileSchema } from '../../src/tools/schema.ts';
import type { Tool } from '../../src/tools/types.ts';

const tool = (name: string, parameters: Tool['parameters'] = { type: 'object', properties: {} }): Tool => ({
  name,
  description: `The ${name} tool.`,
  parameters,
  readOnly: true,
  execute: () => ({ ok: true, text: name }),
});

function thrown(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('ToolRegistry', () => {
  it('registers, finds and lists tools by canonical name in registration order', () => {
    const registry = new ToolRegistry([tool('alpha')]).register(tool('beta'));
    expect(registry.get('beta')?.name).toBe('beta');
    expect(registry.get('gamma')).toBeUndefined();
    expect(registry.has('alpha')).toBe(true);
    expect(registry.names()).toEqual(['alpha', 'beta']);
    expect(registry.list().map((entry) => entry.description)).toEqual(['The alpha tool.', 'The beta tool.']);
  });

  it('refuses a second tool of the same name, but replace swaps it on purpose', () => {
    const registry = new ToolRegistry([tool('alpha')]);
    expect(
      hasErrorCode(
        thrown(() => registry.register(tool('alpha'))),
        'duplicate_tool',
      ),
    ).toBe(true);
    const replacement = { ...tool('alpha'), description: 'new' };
    registry.replace(replacement);
    expect(registry.get('alpha')?.description).toBe('new');
  });

  it.each([
    ['a name providers reject', tool('has space')],
    ['a name that is too long', tool('x'.repeat(65))],
    ['parameters that are not an object schema', tool('t', { type: 'string' })],
    [
      'a schema that does not compile',
      tool('t', { type: 'object', properties: { a: { type: 'nonsense' } } }),
    ],
  ])('refuses %s with invalid_tool', (_label, bad) => {
    const error = thrown(() => new ToolRegistry([bad]));
    expect(hasErrorCode(error, 'invalid_tool')).toBe(true);
  });

  it('compiles the schema once, at registration, and validates with it', () => {
    const registry = new ToolRegistry([
      tool('t', { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }),
    ]);
    const validate = registry.validator('t');
    expect(validate).toBe(registry.validator('t'));
    expect(validate?.({ n: 1 })).toEqual([]);
    expect(validate?.({ n: 'x' })).toEqual([{ path: '/n', message: 'must be integer', keyword: 'type' }]);
  });

  it('accepts draft-07 schemas as well as 2020-12 ones', () => {
    const draft07 = tool('old', {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { at: { type: 'string', format: 'date-time' } },
    });
    const registry = new ToolRegistry([draft07]);
    expect(registry.validator('old')?.({ at: 'yesterday' })).toHaveLength(1);
    expect(registry.validator('old')?.({ at: '2024-01-31T10:00:00Z' })).toEqual([]);
  });

  it('holds the built-in tools, and extra ones after them', () => {
    expect(builtinTools().map((entry) => entry.name)).toEqual([
      'read_file',
      'list_dir',
      'glob',
      'grep',
      'search_replace',
      'write_file',
      'run_terminal_cmd',
      'todo_write',
      'web_fetch',
      'web_search',
    ]);
    expect(
      createToolRegistry([tool('extra')])
        .names()
        .at(-1),
    ).toBe('extra');
    expect(
      builtinTools()
        .filter((entry) => !entry.readOnly)
        .map((entry) => entry.name),
    ).toEqual(['search_replace', 'write_file', 'run_terminal_cmd']);
  });

  it("troupe's own tool schemas are valid JSON Schema (registries compile them on first use, unchecked)", () => {
    const own = [...builtinTools(), declareCompleteTask(), declareWaitForInstruction()];
    for (const entry of own) {
      expect(() => compileSchema(entry.parameters, entry.name), entry.name).not.toThrow();
    }
    const registry = createToolRegistry();
    const validate = registry.validator('read_file');
    expect(validate).toBe(registry.validator('read_file'));
    expect(validate?.({})).toEqual([
      { path: '', message: "must have required property 'path'", keyword: 'required', property: 'path' },
    ]);
    expect(validate?.({ path: 'a.md' })).toEqual([]);
  });

  it('checks a complete_task result schema of the caller at registration, like any tool schema', () => {
    const broken = declareCompleteTask(undefined, { outputSchema: { type: 'nonsense' } });
    expect(
      hasErrorCode(
        thrown(() => new ToolRegistry([broken])),
        'invalid_tool',
      ),
    ).toBe(true);
  });

  it('lets an extra tool replace a built-in of its name, but not another extra one', () => {
    const search = { ...tool('web_search'), description: 'with a backend' };
    expect(createToolRegistry([search]).get('web_search')?.description).toBe('with a backend');
    expect(createToolRegistry([search]).names().indexOf('web_search')).toBe(builtinTools().length - 1);
    expect(() => createToolRegistry([search, search])).toThrow(/already registered/);
  });
});

describe('ToolRegistry.extend', () => {
  const counted = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } as const;

  it('reads the base through: its tools less the hidden names, then its own, in order', () => {
    const base = new ToolRegistry([tool('alpha'), tool('complete_task'), tool('beta')]);
    const agent = base.extend([tool('complete_task'), tool('gamma')], new Set(['complete_task']));
    expect(agent.names()).toEqual(['alpha', 'beta', 'complete_task', 'gamma']);
    expect(agent.get('alpha')).toBe(base.get('alpha'));
    expect(agent.get('complete_task')).not.toBe(base.get('complete_task'));
    expect(agent.has('beta')).toBe(true);
    // The base is not changed by its extensions.
    expect(base.names()).toEqual(['alpha', 'complete_task', 'beta']);
    // A tool added to the base later is seen through.
    base.register(tool('delta'));
    expect(agent.names()).toEqual(['alpha', 'beta', 'delta', 'complete_task', 'gamma']);
  });

  it('refuses a tool whose name the base still shows', () => {
    const base = new ToolRegistry([tool('alpha')]);
    expect(
      hasErrorCode(
        thrown(() => base.extend([tool('alpha')])),
        'duplicate_tool',
      ),
    ).toBe(true);
  });

  it('validates with the base validator, and compiles a schema once for every tool sharing it', () => {
    const base = new ToolRegistry([tool('count', counted)]);
    const agent = base.extend([tool('recount', counted)]);
    expect(agent.validator('count')).toBe(base.validator('count'));
    // Same schema object: one compiled validator.
    expect(agent.validator('recount')).toBe(base.validator('count'));
    expect(agent.validator('count')?.({ n: 'x' }).length).toBeGreaterThan(0);
    expect(agent.validator('recount')?.({ n: 1 })).toEqual([]);
  });
});
