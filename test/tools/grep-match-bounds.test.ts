/**
 * What one grep call may spend matching: re2js is linear in a line, but steps every live
 * instruction of the pattern per character, so a counted repeat the model writes (`a{1,1000}$`,
 * 2,002 instructions) took 11.6 s on a 100,000-character line, synchronously, on the agent's
 * thread. A line whose characters times the pattern's size pass GREP_MAX_LINE_WORK is skipped,
 * and a call stops after GREP_MATCH_TIME_LIMIT_MS of matching; the result says both.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGrepTool } from '../../src/tools/builtin/grep.ts';
import { GREP_MAX_LINE_WORK } from '../../src/tools/constants.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();

describe('grep matching bounds', () => {
  it('skips a line too long for a costly pattern, says so, and still searches the short lines', async () => {
    const cwd = await tempDir();
    // 100,000 characters: 2e8 steps of `a{1,1000}$`, four times GREP_MAX_LINE_WORK.
    await writeFile(path.join(cwd, 'long.txt'), `${'a'.repeat(100_000)}\nshort aaa\n`);
    const toolbox = toolboxFor(cwd);
    const result = await toolbox.call('grep', { pattern: 'a{1,1000}$' });
    const longest = Math.floor(GREP_MAX_LINE_WORK / 2002);
    expect(result).toMatchObject({ ok: true });
    expect(result.text).toBe(
      `long.txt:2: short aaa\n[1 line(s) longer than ${longest} characters were not searched: this pattern is too costly for lines that long (counted repeats such as {1,1000} cost the most); simplify it to search them]`,
    );
  });

  it('searches the same long line whole with a small pattern', async () => {
    const cwd = await tempDir();
    await writeFile(path.join(cwd, 'long.txt'), `${'a'.repeat(100_000)}b\n`);
    const result = await toolboxFor(cwd).call('grep', { pattern: 'a+b$' });
    expect(result.text).toMatch(/^long\.txt:1: a{300}\.\.\.$/);
  });

  it('stops after its matching time limit with the matches found so far, and says so', async () => {
    const cwd = await tempDir();
    await writeFile(path.join(cwd, 'many.txt'), `${'a'.repeat(2_000)}\n`.repeat(50));
    // No time at all: the first line that took any time ends the search.
    const toolbox = toolboxFor(cwd, {}, [createGrepTool({ matchTimeLimitMs: 0 })]);
    const result = await toolbox.call('grep', { pattern: 'a{1,1000}$' });
    const lines = result.text.split('\n');
    expect(lines.at(-1)).toBe(
      '[Stopped after 0 ms of matching; this pattern is slow on these files: simplify it (counted repeats such as {1,1000} cost the most) or narrow the path or glob]',
    );
    expect(lines.length - 1).toBeLessThan(50);
  });
});
