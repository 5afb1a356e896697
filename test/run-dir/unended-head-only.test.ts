/**
 * The count of unended attempts (`unendedAttemptIds`, at each session's start and end and in
 * `troupe score`) reads each unended journal's first line only. Before, it read every such journal
 * whole to look at its first event: a resume over many long unended journals read them all twice,
 * and one past what a buffer holds threw `journal_io`, which the session swallowed, dropping every
 * unended entry it had found: they were "not run" in summary.json, "interrupted" once recounted.
 * The long journal here is a sparse file (its tail is holes, no disk is written) past 2 GiB, which
 * `readFileSync` refuses to read whole.
 */
import { readFileSync, truncateSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { journalFile, readRunDir } from '../../src/run-dir/run-dir.ts';
import type { RunSummary } from '../../src/run-dir/summary.ts';
import { unendedAttempts } from '../../src/run-dir/timeline.ts';
import { tempDir } from './helpers.ts';
import { killedRun, resumeFirstEntry } from './killed-run.ts';

/** Past the 2 GiB `readFileSync` reads whole (`ERR_FS_FILE_TOO_LARGE`). */
const HUGE = 3 * 1024 * 1024 * 1024;

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-unended-head-'));
});
afterEach(() => cleanup());

describe('the unended count', () => {
  it('reads only the head of an unended journal, however long the journal', async () => {
    // A kill while both entries ran.
    const killed = await killedRun(dir);
    const { root, paths, runPlan } = killed;
    // The second's journal goes on far past its first line (only the head is its business here).
    const long = runPlan.runs[1];
    if (long === undefined) throw new Error('no second plan entry');
    truncateSync(journalFile(paths, long.agentId), HUGE);

    expect(unendedAttempts(readRunDir(root))).toEqual({ entries: new Set([0, 1]), nested: 0 });

    // A resume that finishes the first entry only counts the second interrupted, not "not run".
    await resumeFirstEntry(killed);
    const written = JSON.parse(readFileSync(paths.summary, 'utf8')) as RunSummary;
    expect(written.counts).toMatchObject({ completed: 1, interrupted: 1, notRun: 0 });
  });
});
