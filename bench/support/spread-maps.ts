/**
 * Why src/objects.ts exists: how many hidden classes (V8 maps) and how much time each way of
 * copying an object with more members costs, in this Node. Each case builds 300,000 copies of a
 * fresh `{ ok, text }` (a tool outcome's shape) and counts how often a copy's map differs from the
 * previous copy's: 0 means every copy shares one map, so the inline caches that read them stay
 * monomorphic; ~300,000 means a new map per copy (bench/RESULTS.md, session 8).
 *
 *   node --allow-natives-syntax --import tsx bench/support/spread-maps.ts
 */

const COPIES = 300_000;

type Copy = (source: { ok: boolean; text: string }) => object;

function haveSameMap(): (a: object, b: object) => boolean {
  try {
    return new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
  } catch {
    throw new Error('Run with node --allow-natives-syntax (V8 natives give the map comparison)');
  }
}

const sameMap = haveSameMap();
const ref = { agentId: 'a', parentId: undefined, definition: 'd' };

const cases: readonly (readonly [string, Copy])[] = [
  ['{ ...o }', (o) => ({ ...o })],
  ['{ ...o, a, b }', (o) => ({ ...o, canonicalName: 'c', attempts: 1 })],
  ['{ ...o, ...ref }', (o) => ({ ...o, ...ref })],
  [
    '{ ...o } then r.a = ...',
    (o) => {
      const r: Record<string, unknown> = { ...o };
      r.canonicalName = 'c';
      return r;
    },
  ],
  ['{ ...(c ? { a } : {}), b }', (o) => ({ ...(o.ok ? { capture: 1 } : {}), b: 2 })],
  ['{ t, a, ...(c ? {} : { x }) }', (o) => ({ type: 'T', text: o.text, ...(o.ok ? {} : { refused: true }) })],
  ['Object.assign({}, o, { a, b })', (o) => Object.assign({}, o, { canonicalName: 'c', attempts: 1 })],
  [
    'Object.assign({}, o) then r.a = ...',
    (o) => {
      const r: Record<string, unknown> = Object.assign({}, o);
      r.canonicalName = 'c';
      return r;
    },
  ],
];

console.log(
  `node ${process.version}, V8 ${process.versions.v8}: ${COPIES.toLocaleString('en-US')} copies each`,
);
for (const [name, copy] of cases) {
  let previous: object | undefined;
  let changes = 0;
  const start = performance.now();
  for (let i = 0; i < COPIES; i += 1) {
    const made = copy({ ok: true, text: `Instruction: ${i}` });
    if (previous !== undefined && !sameMap(previous, made)) changes += 1;
    previous = made;
  }
  const us = ((performance.now() - start) * 1000) / COPIES;
  console.log(
    `${name.padEnd(38)} ${us.toFixed(3)} µs a copy, ${changes.toLocaleString('en-US')} map changes`,
  );
}
