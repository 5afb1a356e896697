import { describe, expect, it } from 'vitest';
import { extend } from '../src/objects.ts';

describe('extend', () => {
  it('copies what the spread copies, in the same order, and changes neither part', () => {
    const symbol = Symbol('s');
    const base = { a: 1, b: { nested: true }, [symbol]: 'sym', skipped: undefined };
    Object.defineProperty(base, 'hidden', { value: 'not enumerable', enumerable: false });
    const extra = { b: 2, c: 3 };
    const more = { d: 4, a: 5 };
    const copy = extend(base, extra, more);
    const spread = { ...base, ...extra, ...more };
    expect(copy).toStrictEqual(spread);
    expect(Reflect.ownKeys(copy)).toEqual(Reflect.ownKeys(spread));
    expect(copy).not.toHaveProperty('hidden');
    expect(base).toStrictEqual({ a: 1, b: { nested: true }, [symbol]: 'sym', skipped: undefined });
    expect(extra).toStrictEqual({ b: 2, c: 3 });

    const two = extend(base, extra);
    expect(two).toStrictEqual({ ...base, ...extra });
    expect(two).not.toBe(base);
  });

  it('reads getters once, as values, like the spread', () => {
    let reads = 0;
    const base = {
      get value() {
        reads += 1;
        return reads;
      },
    };
    const copy = extend(base, { other: true });
    expect(reads).toBe(1);
    expect(Object.getOwnPropertyDescriptor(copy, 'value')).toMatchObject({ value: 1, writable: true });
  });

  it('copies an own `__proto__` member of any part as a member, never as the prototype', () => {
    for (const at of [0, 1, 2]) {
      const parts: object[] = [{ a: 1 }, { b: 2 }, { c: 3 }];
      parts[at] = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as object;
      const copy = extend(parts[0] as object, parts[1] as object, parts[2]);
      expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
      expect(Object.hasOwn(copy, '__proto__')).toBe(true);
      expect((copy as { polluted?: boolean }).polluted).toBeUndefined();
    }
  });
});
