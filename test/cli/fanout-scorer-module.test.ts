/** A scorer module that does not export a function stops `troupe fanout` before a run directory exists. */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { captureIO, tempDir } from '../run-dir/helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-scorer-module-'));
  writeFileSync(
    path.join(dir, 'scorers.mjs'),
    'export const notAFunction = 42;\nexport const always = () => true;\n',
  );
});
afterEach(() => cleanup());

function plan(exportName: string): string {
  const file = path.join(dir, `plan-${exportName}.yaml`);
  writeFileSync(
    file,
    [
      'agent: worker',
      `cwd: ${JSON.stringify(dir)}`,
      'threads: 1',
      'runs:',
      '  - { id: a, task: Say hello }',
      'scorers:',
      `  - { name: fn, type: module, module: scorers.mjs, export: ${exportName} }`,
      '',
    ].join('\n'),
  );
  return file;
}

describe('troupe fanout with a scorer module whose export is not a function', () => {
  it('fails with scorer_module and leaves no run directory, so the same --out can be used again', async () => {
    const runDir = path.join(dir, 'run');
    const io = captureIO();
    expect(await main(['fanout', plan('notAFunction'), '--out', runDir, '--json'], io)).toBe(1);
    expect(io.err()).toContain('scorer_module');
    expect(existsSync(runDir)).toBe(false);

    expect(await main(['fanout', plan('always'), '--out', runDir, '--json'], captureIO())).toBe(0);
  });
});
