import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGrepTool } from '../../src/tools/builtin/grep.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();

describe('grep over a tree with more files than it looks at', () => {
  it('stops after GREP_MAX_VISITED files, glob or not, and says so', async () => {
    const cwd = await tempDir();
    await mkdir(path.join(cwd, 'src'));
    for (let i = 0; i < 8; i += 1) await writeFile(path.join(cwd, 'src', `f${i}.txt`), 'nothing here\n');
    // The real bound is GREP_MAX_VISITED (200,000 files): lowered so the tree stays small. Not
    // with vi.mock: test files share their modules (vitest.config.ts isolate: false).
    const toolbox = toolboxFor(cwd, {}, [createGrepTool(5)]);
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
