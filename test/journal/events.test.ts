import { describe, expect, it } from 'vitest';
import { hashContinuation, hashInput, inputHasher } from '../../src/journal/events.ts';
import type { ModelSettings } from '../../src/providers/model-settings.ts';
import type { ToolSpec } from '../../src/tools/types.ts';

describe('inputHasher', () => {
  it('gives exactly the hash hashInput gives, secrets masked, for every input', () => {
    const tools = [
      {
        name: 't',
        description: 'd',
        parameters: { type: 'object', properties: { apiKey: { type: 'string' } } },
      },
    ];
    const system = 'You are x. Authorization: Bearer abcdefgh12345678';
    const hasher = inputHasher(system, tools);
    for (const input of [
      '',
      'plain',
      'key sk-abcdefghijklmnop and "token": "xyz"',
      'ünïcode \u2028 "quotes"',
    ]) {
      expect(hasher(input)).toBe(hashInput(system, input, tools));
    }
    expect(hasher('a')).not.toBe(hasher('b'));
  });

  it('gives exactly hashContinuation while the entries of a round grow, and after a new round starts', () => {
    const tools = [{ name: 't', description: 'd — ü', parameters: { type: 'object' } }];
    // Not ASCII: the fixed part is hashed from bytes encoded once, which must be its UTF-8.
    const system = 'You are x. Ünïcode ✓ \u2028 😀';
    const hasher = inputHasher(system, tools);
    const round: string[] = [];
    const input = 'Task: password=hunter2';
    for (const entry of [
      'Assistant: hi',
      'Tool call: t {"apiKey":"sk-abcdefghijklmnop"}',
      'Tool result (t): ok\nline 2',
    ]) {
      round.push(entry);
      expect(hasher(input, round)).toBe(hashContinuation(system, input, tools, round));
    }
    // A new round: a new array with other entries, and another render.
    const next = ['Tool call: t {}'];
    expect(hasher('other render', next)).toBe(hashContinuation(system, 'other render', tools, next));
    expect(hasher(input)).toBe(hashInput(system, input, tools));
    // The same array cut shorter (the loop never does this): recomputed, still the exact hash.
    round.length = 0;
    round.push('Assistant: again');
    expect(hasher(input, round)).toBe(hashContinuation(system, input, tools, round));
  });
  it('gives each agent the hash of its own prompt, tools and settings when agents follow one another', () => {
    type Specs = readonly ToolSpec[];
    const system = 'You are x.';
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    const tools: Specs = [{ name: 't', description: 'd', parameters: schema }];
    const hashOf = (prompt: string, specs: Specs, settings?: ModelSettings): string => {
      const hash = inputHasher(prompt, specs, settings)('x');
      expect(hash).toBe(hashInput(prompt, 'x', specs, settings));
      return hash;
    };
    const base = hashOf(system, tools);
    // Each agent's specs are its own objects, with the tools' fields: the same hash.
    const copies = tools.map((spec) => ({ ...spec }));
    expect(hashOf(system, copies)).toBe(base);
    // Right after an agent with the base prompt and tools, one that differs in one thing only.
    const changed: [string, Specs, ModelSettings?][] = [
      ['You are y.', tools],
      [system, [{ name: 't', description: 'd', parameters: { type: 'object' } }]],
      [system, [{ name: 't', description: 'e', parameters: schema }]],
      [system, [{ name: 'u', description: 'd', parameters: schema }]],
      [system, [...tools, { name: 'v', description: 'd', parameters: schema }]],
      [system, tools, { temperature: 0.5 }],
    ];
    for (const [prompt, specs, settings] of changed) {
      expect(hashOf(system, tools)).toBe(base);
      expect(hashOf(prompt, specs, settings)).not.toBe(base);
    }
  });
});
