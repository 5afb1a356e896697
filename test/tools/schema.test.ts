import { describe, expect, it } from 'vitest';
import { compileSchema } from '../../src/tools/schema.ts';

/** A schema of `$id` `https://example.com/shared` whose `n` (through `$defs` and a nested `$id`) is of `type`. */
function typed(type: string, dialect?: string) {
  return {
    ...(dialect === undefined ? {} : { $schema: dialect }),
    $id: 'https://example.com/shared',
    type: 'object',
    properties: { n: { $ref: '#/$defs/n' }, m: { $ref: 'https://example.com/inner' } },
    $defs: { n: { type }, inner: { $id: 'https://example.com/inner', type } },
  };
}

describe('compileSchema', () => {
  it('checks schemas of one `$id` each against its own definitions, however often compiled', () => {
    for (const dialect of [undefined, 'http://json-schema.org/draft-07/schema#']) {
      const strings = compileSchema(typed('string', dialect), 'strings');
      const numbers = compileSchema(typed('number', dialect), 'numbers');
      const again = compileSchema(typed('string', dialect), 'strings again');
      expect(strings({ n: 'x', m: 'y' })).toEqual([]);
      expect(strings({ n: 1, m: 2 }).map((problem) => problem.path)).toEqual(['/n', '/m']);
      expect(numbers({ n: 1, m: 2 })).toEqual([]);
      expect(numbers({ n: 'x', m: 'y' }).map((problem) => problem.path)).toEqual(['/n', '/m']);
      expect(again({ n: 1 })).toMatchObject([{ path: '/n', message: 'must be string' }]);
    }
  });

  it('refuses a schema with an `$id` that is not valid JSON Schema, as any other', () => {
    expect(() => compileSchema({ $id: 'https://example.com/bad', type: 'nope' }, 'bad')).toThrow(
      expect.objectContaining({
        code: 'invalid_schema',
        message: expect.stringMatching(/^The JSON Schema of bad is invalid: schema is invalid: /),
      }),
    );
  });
});
