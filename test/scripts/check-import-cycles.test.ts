import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findViolations, sourceFiles } from '../../scripts/check-import-cycles.ts';

let root: string | undefined;
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** Writes `files` (path -> source) under a fresh directory and returns the checker's findings. */
function check(files: Record<string, string>) {
  root = mkdtempSync(path.join(tmpdir(), 'troupe-cycles-'));
  for (const [name, text] of Object.entries(files)) {
    const file = path.join(root, name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  return findViolations(root, sourceFiles(root));
}

describe('import-cycle check', () => {
  it('accepts imports that go one way between folders', () => {
    expect(
      check({
        'supervisor/a.ts': "import { b } from '../engines/b.ts';\nexport const a = b;\n",
        'engines/b.ts': "import type { C } from '../protocol/c.ts';\nexport const b: C = 1;\n",
        'protocol/c.ts': 'export type C = number;\n',
      }),
    ).toEqual([]);
  });

  it('accepts a cycle of type imports inside one folder', () => {
    expect(
      check({
        'x/a.ts': "import type { B } from './b.ts';\nexport type A = { b?: B };\n",
        'x/b.ts': "import type { A } from './a.ts';\nexport type B = { a?: A };\n",
      }),
    ).toEqual([]);
  });

  it('reports a cycle across two folders even when one side imports only types', () => {
    const violations = check({
      'supervisor/a.ts': "import { b } from '../engines/b.ts';\nexport interface A {}\nexport const a = b;\n",
      'engines/b.ts': "import type { A } from '../supervisor/a.ts';\nexport const b: A = {};\n",
    });
    expect(violations).toEqual([{ kind: 'cross-folder', cycle: expect.any(Array) }]);
    const cycle = violations[0]?.cycle ?? [];
    expect(cycle).toHaveLength(3);
    expect(cycle[0]).toBe(cycle[2]);
    expect(new Set(cycle)).toEqual(new Set(['engines/b.ts', 'supervisor/a.ts']));
  });

  it('reports a value-import cycle inside one folder, through re-exports and dynamic imports too', () => {
    const violations = check({
      'x/a.ts': "export { b } from './b.ts';\nexport const a = 1;\n",
      'x/b.ts': "export const b = 2;\nexport const load = () => import('./a.ts');\n",
    });
    expect(violations.map((v) => v.kind)).toEqual(['value']);
  });

  it('counts `import { type X }` as a value import: the module is still loaded', () => {
    const violations = check({
      'x/a.ts': "import { type B } from './b.ts';\nexport type A = B;\n",
      'x/b.ts': "import { type A } from './a.ts';\nexport type B = A;\n",
    });
    expect(violations.map((v) => v.kind)).toEqual(['value']);
  });
});
