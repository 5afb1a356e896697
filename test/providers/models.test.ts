import { describe, expect, it } from 'vitest';
import { hasErrorCode } from '../../src/errors.ts';
import { parseModelMap, resolveModel } from '../../src/providers/models.ts';
import { priceFor } from '../../src/providers/pricing.ts';
import { spawnModel } from '../../src/supervisor/record-spec.ts';
import { makeDefinition } from '../prompt/make-definition.ts';

describe('resolveModel', () => {
  it('resolves aliases per provider family, case-insensitively, and keeps ids as written', () => {
    expect(resolveModel({ kind: 'anthropic', definitionModel: 'Sonnet' }).id).toBe('claude-sonnet-4-6');
    expect(resolveModel({ kind: 'openai', definitionModel: 'haiku' }).id).toBe('gpt-5-mini');
    expect(resolveModel({ kind: 'anthropic', definitionModel: 'claude-3-5-haiku-20241022' }).id).toBe(
      'claude-3-5-haiku-20241022',
    );
    expect(resolveModel({ kind: 'module', definitionModel: 'sonnet' }).id).toBe('sonnet');
  });

  it("turns display names into ids, with VS Code's vendor suffix too", () => {
    expect(resolveModel({ kind: 'anthropic', definitionModel: 'Claude Sonnet 4.5' }).id).toBe(
      'claude-sonnet-4-5',
    );
    expect(resolveModel({ kind: 'anthropic', definitionModel: 'Claude Sonnet 4.5 (copilot)' }).id).toBe(
      'claude-sonnet-4-5',
    );
    expect(resolveModel({ kind: 'openai', definitionModel: 'GPT-5 (copilot)' }).id).toBe('GPT-5 (copilot)');
  });

  it('lets a requested model win, and resolves an alias in it too', () => {
    expect(resolveModel({ kind: 'anthropic', requested: 'opus', definitionModel: 'haiku' })).toEqual({
      id: 'claude-opus-4-7',
      from: 'opus',
      source: 'requested',
    });
  });

  it('applies modelMap entries, provider-scoped ones first', () => {
    const modelMap = { sonnet: 'qwen3:32b', 'local:sonnet': 'llama3.3', 'openai:haiku': 'gpt-5-nano' };
    expect(resolveModel({ kind: 'openai', definitionModel: 'sonnet', modelMap }).id).toBe('qwen3:32b');
    expect(resolveModel({ kind: 'openai', provider: 'local', definitionModel: 'sonnet', modelMap }).id).toBe(
      'llama3.3',
    );
    expect(resolveModel({ kind: 'openai', definitionModel: 'haiku', modelMap }).id).toBe('gpt-5-nano');
    expect(resolveModel({ kind: 'anthropic', definitionModel: 'haiku', modelMap }).id).toBe(
      'claude-haiku-4-5',
    );
  });

  it('takes the parent model for inherit, else the run default, else the provider default', () => {
    expect(
      resolveModel({ kind: 'openai', definitionModel: 'inherit', parentModel: 'gpt-4.1' }),
    ).toMatchObject({
      id: 'gpt-4.1',
      source: 'parent',
    });
    expect(resolveModel({ kind: 'openai', definitionModel: 'inherit', defaultModel: 'opus' }).id).toBe(
      'gpt-5',
    );
    expect(resolveModel({ kind: 'anthropic', definitionModel: 'default' }).id).toBe('claude-sonnet-4-6');
    // `default` and the `sonnet` alias name the same model, and that model has a price.
    expect(resolveModel({ kind: 'anthropic', definitionModel: 'default' }).id).toBe(
      resolveModel({ kind: 'anthropic', definitionModel: 'sonnet' }).id,
    );
    expect(priceFor(resolveModel({ kind: 'anthropic', definitionModel: 'default' }).id)).toBeDefined();
  });

  it('runs the simulated model whatever the definition says', () => {
    expect(resolveModel({ kind: 'simulated', definitionModel: 'opus' }).id).toBe('simulated');
  });
});

describe('spawnModel (both Supervisor engines)', () => {
  it('resolves a spawn by its provider and inherits the parent agent’s resolved model', () => {
    const options = {
      providers: { claude: { kind: 'anthropic' as const }, gpt: { kind: 'openai' as const } },
      defaultModel: 'default',
      modelMap: {},
    };
    const spec = (provider: string, model: string, parentId?: string) => ({
      agentId: 'child',
      parentId,
      depth: 1,
      definition: makeDefinition({ model }),
      task: 't',
      context: [],
      metadata: {},
      provider,
      model: '',
      limits: {},
      resume: false,
      mcpServers: {},
      modelSettings: {},
      defaultModelSettings: {},
      blocks: undefined,
      permissions: {},
    });
    expect(spawnModel(spec('claude', 'haiku'), options, () => undefined)).toBe('claude-haiku-4-5');
    expect(spawnModel(spec('gpt', 'haiku'), options, () => undefined)).toBe('gpt-5-mini');
    expect(spawnModel(spec('gpt', 'inherit', 'parent'), options, () => 'gpt-4.1')).toBe('gpt-4.1');
    expect(spawnModel(spec('gpt', 'default'), options, () => undefined)).toBe('gpt-4.1-mini');
  });
});

describe('parseModelMap', () => {
  it('reads alias=id entries and refuses malformed ones', () => {
    expect(parseModelMap(['sonnet=claude-sonnet-4-5', 'openai:haiku = gpt-5-nano'])).toEqual({
      sonnet: 'claude-sonnet-4-5',
      'openai:haiku': 'gpt-5-nano',
    });
    for (const bad of [['sonnet'], ['=x'], ['sonnet=']]) {
      expect(() => parseModelMap(bad, '--model-map')).toThrow(
        expect.objectContaining({ code: 'invalid_option' }),
      );
    }
    let thrown: unknown;
    try {
      parseModelMap({ sonnet: 3 });
    } catch (error) {
      thrown = error;
    }
    expect(hasErrorCode(thrown, 'invalid_option')).toBe(true);
  });
});
