/**
 * An agent an earlier session left unended (a kill while it ran) and a resume did not finish is
 * counted interrupted in the summary that resume writes, as `troupe score` (unendedAttempts) and
 * `troupe report` (the timeline) count it. Before, the session counted only the agents it tracked
 * itself: such an entry was "not run" in summary.json and "interrupted" once recounted.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readRunDir } from '../../src/run-dir/run-dir.ts';
import { type RunSummary, summarize } from '../../src/run-dir/summary.ts';
import { buildTimeline, unendedAttempts, unendedOf } from '../../src/run-dir/timeline.ts';
import { tempDir } from './helpers.ts';
import { killedRun, resumeFirstEntry } from './killed-run.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-unended-resume-'));
});
afterEach(() => cleanup());

describe('a resume of a subset after a kill', () => {
  it('counts the entry it left unended as interrupted, as troupe score and troupe report do', async () => {
    // A kill while both entries ran, then a resume that finishes the first entry only.
    const killed = await killedRun(dir);
    const { root, paths } = killed;
    const { summary } = await resumeFirstEntry(killed);

    const written = JSON.parse(readFileSync(paths.summary, 'utf8')) as RunSummary;
    expect(written.counts).toMatchObject({ completed: 1, interrupted: 1, notRun: 0 });
    expect(summary.counts).toEqual(written.counts);
    // What `troupe score` writes and `troupe report` shows of the same directory.
    const contents = readRunDir(root);
    const unended = unendedAttempts(contents);
    expect(unended).toEqual(unendedOf(buildTimeline(contents)));
    const recounted = summarize(contents.plan, contents.results, [], new Date(), undefined, unended);
    expect(recounted.counts).toEqual(written.counts);
  });
});
