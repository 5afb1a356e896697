import { describe, expect, it } from 'vitest';
import { compileBuiltinScorer } from '../../src/eval/builtin-scorers.ts';
import { SCHEMA_VALIDATOR_CACHE_ENTRIES, schemaCacheSizes } from '../../src/tools/schema.ts';
import { item } from './helpers.ts';

describe('the schema scorer with an expected schema per item', () => {
  it('keeps no more validators, and the shared Ajv no more schemas, as items are scored', () => {
    const scorer = compileBuiltinScorer({ type: 'schema', name: 'shape' });
    const expectedOf = (i: number, dialect?: string) => ({
      ...(dialect === undefined ? {} : { $schema: dialect }),
      type: 'object',
      required: [`k${i}`],
      properties: { [`k${i}`]: { type: 'integer', minimum: i } },
    });
    // Both dialects' shared instances (and their meta-schemas) exist before the count is taken.
    for (const dialect of [undefined, 'http://json-schema.org/draft-07/schema#']) {
      expect(scorer(item({ k0: 0 }, expectedOf(0, dialect))).pass).toBe(true);
    }
    const before = schemaCacheSizes().sharedHeld;
    const items = SCHEMA_VALIDATOR_CACHE_ENTRIES + 44;
    for (let i = 1; i <= items; i++) {
      const dialect = i % 2 === 0 ? undefined : 'http://json-schema.org/draft-07/schema#';
      expect(scorer(item({ [`k${i}`]: i }, expectedOf(i, dialect), { index: i })).pass).toBe(true);
      expect(scorer(item({ [`k${i}`]: i - 1 }, expectedOf(i, dialect), { index: i })).pass).toBe(false);
    }
    // Each item's schema was compiled in the shared Ajv, which kept it (and its values) for good.
    expect(schemaCacheSizes().sharedHeld).toBe(before);
    expect(schemaCacheSizes().validators).toBe(SCHEMA_VALIDATOR_CACHE_ENTRIES);
  });
});
