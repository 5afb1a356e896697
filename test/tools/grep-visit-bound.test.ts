import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

// The real bound is 200,000 files: lowered here, in this file only, so the tree stays small.
vi.mock('../../src/tools/constants.ts', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../src/tools/constants.ts')>()),
  GREP_MAX_VISITED: 5,
}));

const tempDir = useTempDirs();

describe('grep over a tree with more files than it looks at', () => {
  it('stops after GREP_MAX_VISITED files, glob or not, and says so', async () => {
    const cwd = await tempDir();
    await mkdir(path.join(cwd, 'src'));
    for (let i = 0; i < 8; i += 1) await writeFile(path.join(cwd, 'src', `f${i}.txt`), 'nothing here\n');
    const toolbox = toolboxFor(cwd);
    const stop = '[Stopped after looking at 5 files; search a smaller directory or narrow the glob]';

    const none = await toolbox.call('grep', { pattern: 'zzz' });
    expect(none).toMatchObject({ ok: true, text: `No matches for /zzz/ in the working directory.\n${stop}` });
    const some = await toolbox.call('grep', { pattern: 'nothing', glob: '*.txt' });
    expect(some.text.split('\n')).toHaveLength(6);
    expect(some.text.endsWith(`\n${stop}`)).toBe(true);

    const few = await toolbox.call('grep', { pattern: 'zzz', path: 'src', glob: 'f1.txt' });
    expect(few.text).toContain(stop);
  });
});
