import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFileWithin } from '../src/bounded-read.ts';

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-bounded-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('readFileWithin', () => {
  it('reads a file of up to the limit whole and says too_large for one byte more', async () => {
    const at = path.join(dir, 'at');
    const over = path.join(dir, 'over');
    const content = 'x'.repeat(200_000);
    writeFileSync(at, content);
    writeFileSync(over, `${content}y`);
    const read = await readFileWithin(at, 200_000);
    expect(read.kind === 'file' && read.bytes.toString()).toBe(content);
    expect(await readFileWithin(over, 200_000)).toEqual({ kind: 'too_large' });
    expect(await readFileWithin(dir, 10)).toEqual({ kind: 'not_file', directory: true });
    await expect(readFileWithin(path.join(dir, 'missing'), 10)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
