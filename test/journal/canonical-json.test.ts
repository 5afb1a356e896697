import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasErrorCode, isTroupeError } from '../../src/errors.ts';
import { canonicalJson, hashValue, sha256Hex } from '../../src/journal/canonical-json.ts';
import { MAX_JSON_DEPTH } from '../../src/journal/constants.ts';

describe('canonicalJson', () => {
  it('sorts keys by code unit, integer-like keys included, at every depth', () => {
    expect(canonicalJson({ b: 1, a: { z: true, '10': 'x', '9': 'y' } })).toBe(
      '{"a":{"10":"x","9":"y","z":true},"b":1}',
    );
  });

  it('drops undefined members and writes undefined array items and non-finite numbers as null', () => {
    expect(
      canonicalJson({ a: undefined, b: [undefined, Number.NaN, Number.POSITIVE_INFINITY], c: null }),
    ).toBe('{"b":[null,null,null],"c":null}');
  });

  it('gives the same text for the same data whatever the insertion order', () => {
    expect(canonicalJson({ x: 1, y: [1, { q: 2, p: 3 }] })).toBe(
      canonicalJson({ y: [1, { p: 3, q: 2 }], x: 1 }),
    );
  });

  it('is a fixed point of parse then serialize, so a journal line re-hashes to the same digest', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
      }),
    );
  });

  it('honours toJSON (dates become ISO strings)', () => {
    expect(canonicalJson({ at: new Date(Date.UTC(2025, 0, 2)) })).toBe('{"at":"2025-01-02T00:00:00.000Z"}');
  });

  it('rejects a value that contains itself with journal_unserializable', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(expect.objectContaining({ code: 'journal_unserializable' }));
    try {
      canonicalJson(10n);
    } catch (error) {
      expect(hasErrorCode(error, 'journal_unserializable')).toBe(true);
      return;
    }
    expect.unreachable('a bigint must be rejected');
  });

  it('rejects a value that contains itself further down, and writes a value shared by two members', () => {
    const inner: Record<string, unknown> = { name: 'x' };
    const cyclic = { a: [1, { b: inner }] };
    inner.back = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(
      expect.objectContaining({ code: 'journal_unserializable', message: expect.stringContaining('itself') }),
    );
    const shared = { z: 1 };
    expect(canonicalJson({ p: shared, q: [shared, shared] })).toBe('{"p":{"z":1},"q":[{"z":1},{"z":1}]}');
    // The writer is reused: an error leaves nothing behind for the next value.
    expect(canonicalJson({ ok: [true] })).toBe('{"ok":[true]}');
  });

  it('hashes the canonical text with SHA-256', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(hashValue({ b: 1, a: 2 })).toBe(sha256Hex('{"a":2,"b":1}'));
  });
});

describe('canonicalJson on hostile values', () => {
  it('refuses nesting deeper than MAX_JSON_DEPTH with a typed error, not a stack overflow', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 50_000; i++) deep = [deep];
    let error: unknown;
    try {
      canonicalJson({ data: deep });
    } catch (caught) {
      error = caught;
    }
    expect(isTroupeError(error) && error.code).toBe('journal_unserializable');
    expect((error as Error).message).toContain(`at most ${MAX_JSON_DEPTH} levels`);
  });

  it('writes values nested exactly MAX_JSON_DEPTH levels deep', () => {
    let deep: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH; i++) deep = { a: deep };
    expect(canonicalJson(deep)).toBe(JSON.stringify(deep));
  });
});

describe('canonicalJson strings', () => {
  it('writes every string exactly as JSON.stringify does, masked or not', async () => {
    const { JOURNAL_MASKING } = await import('../../src/journal/redact.ts');
    const samples = [
      '',
      'plain',
      'quote " and backslash \\',
      'controls \u0000\u0001\b\f\n\r\t\u001f end',
      'del \u007f, nbsp \u00a0, line sep \u2028 \u2029',
      'pair \u{1F600}, lone high \ud800, lone low \udfff, reversed \udc00\ud800',
      'caf\u00e9 \u4e2d\u6587',
      'x'.repeat(300),
      `${'y'.repeat(300)}"`,
    ];
    for (const text of samples) {
      expect(canonicalJson(text)).toBe(JSON.stringify(text));
      expect(canonicalJson({ text }, JOURNAL_MASKING)).toBe(`{"text":${JSON.stringify(text)}}`);
      expect(canonicalJson([text, { a: text }])).toBe(JSON.stringify([text, { a: text }]));
    }
  });
});

describe('canonicalJson, one value after another', () => {
  /** The canonical text by another route: recursion, sorted keys, JSON.stringify for the rest. */
  function reference(value: unknown): string | undefined {
    if (value === undefined) return undefined;
    if (value === null || typeof value !== 'object') return JSON.stringify(value);
    if (Array.isArray(value)) return `[${value.map((item) => reference(item) ?? 'null').join(',')}]`;
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .sort()
      .flatMap((key) => {
        const text = reference(record[key]);
        return text === undefined ? [] : [`${JSON.stringify(key)}:${text}`];
      });
    return `{${members.join(',')}}`;
  }

  it('writes each value exactly, whatever the sizes and dropped members of the ones before', () => {
    // The writer keeps its pieces between values (long then short texts, members taken back
    // because they are undefined, a value that failed half-way): nothing may leak into the next.
    const wide = (n: number): Record<string, unknown> =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i % 3 === 0 ? undefined : `v${i}`]));
    const values: unknown[] = [
      wide(400),
      { a: 1 },
      'alone',
      wide(60),
      { z: undefined, y: [undefined, 'q'], x: { w: undefined } },
      wide(7),
      [1, 2, 3],
      wide(200),
      { only: undefined },
      wide(61),
      { b: '' },
      { big: 'x'.repeat(70_000), after: [1, 2] },
      `"${'y'.repeat(70_000)}`,
      wide(5),
    ];
    const cyclic: Record<string, unknown> = { early: 'x' };
    cyclic.self = cyclic;
    // A short text, then one that fails after more pieces, then one in between.
    expect(canonicalJson(wide(2))).toBe(reference(wide(2)));
    expect(() => canonicalJson({ ...wide(30), z: 1n })).toThrow();
    expect(canonicalJson(wide(7))).toBe(reference(wide(7)));
    const texts: (string | undefined)[] = [];
    for (const value of values) {
      texts.push(canonicalJson(value));
      expect(() => canonicalJson({ ...wide(30), z: cyclic })).toThrow();
    }
    expect(texts).toEqual(values.map(reference));
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { maxLength: 8 }), (batch) => {
        for (const value of batch) expect(canonicalJson(value)).toBe(reference(value));
      }),
    );
  });
});
