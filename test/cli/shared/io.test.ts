import { afterEach, describe, expect, it } from 'vitest';
import { outputColumns } from '../../../src/cli/shared/io.ts';

const saved = process.env.COLUMNS;
afterEach(() => {
  if (saved === undefined) delete process.env.COLUMNS;
  else process.env.COLUMNS = saved;
});

describe('outputColumns', () => {
  it('is the terminal width on a terminal, and has no limit off one', () => {
    delete process.env.COLUMNS;
    expect(outputColumns({ isTTY: true, columns: 93 })).toBe(93);
    expect(outputColumns({ isTTY: false, columns: 93 })).toBe(Number.POSITIVE_INFINITY);
    expect(outputColumns({})).toBe(Number.POSITIVE_INFINITY);
  });

  it('takes COLUMNS when it is a positive whole number, on a terminal or not', () => {
    process.env.COLUMNS = '200';
    expect(outputColumns({ isTTY: true, columns: 93 })).toBe(200);
    expect(outputColumns({})).toBe(200);
    for (const bad of ['0', '-5', '12.5', 'wide', '']) {
      process.env.COLUMNS = bad;
      expect(outputColumns({ isTTY: true, columns: 93 })).toBe(93);
    }
  });
});
