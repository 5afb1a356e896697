/**
 * Copying objects on hot paths.
 *
 * On Node 20 (V8 11.3) an object literal that starts with a spread and has more members after it
 * (`{ ...base, key: value }`, `{ ...a, ...b }`, or `{ ...base }` given a member afterwards) gets
 * a new hidden class every time it is evaluated: about 1 µs to make one, and every inline cache
 * that later reads such objects meets a new shape each time and goes megamorphic. A spread alone
 * (`{ ...base }`) and members before a spread (`{ type, ...(x ? { x } : {}) }`) keep one hidden
 * class, as does `Object.assign({}, base, extra)`. Measured on every tool call's result: 3.6 µs a
 * call with the spread against 0.6, and the actor host's routing path, run hot on one thread
 * (bench/support/path-cpu.ts), ~20 % shorter once its results were built with `Object.assign`
 * (bench/RESULTS.md, session 8). So code that runs per model request, tool call or event builds
 * such copies with {@link extend}; configuration read once may spread freely.
 */

/**
 * `{ ...base, ...extra, ...more }`: the same members in the same order, with one hidden class for
 * every copy of the same shapes (see the module comment). An own `__proto__` member of any part
 * (an object parsed from JSON) is copied as a member, as the spread copies it: `Object.assign`
 * alone would set the copy's prototype instead.
 */
export function extend<A extends object, B extends object, C extends object = object>(
  base: A,
  extra: B,
  more?: C,
): A & B & C {
  if (Object.hasOwn(base, '__proto__') || Object.hasOwn(extra, '__proto__')) {
    return { ...base, ...extra, ...more } as A & B & C;
  }
  if (more === undefined) return Object.assign({}, base, extra) as A & B & C;
  if (Object.hasOwn(more, '__proto__')) return { ...base, ...extra, ...more };
  return Object.assign({}, base, extra, more);
}
