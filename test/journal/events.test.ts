import { describe, expect, it } from 'vitest';
import { hashInput, inputHasher } from '../../src/journal/events.ts';

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
});
