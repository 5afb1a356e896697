/**
 * The temporary journal directory a Supervisor without `journalDir` creates: made only once every
 * option is valid, and gone after close().
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Supervisor, type SupervisorOptions } from '../../src/index.ts';

let scratch = '';
let savedTmpdir: string | undefined;
beforeEach(() => {
  // os.tmpdir() reads TMPDIR on every call: the supervisor's directory lands in `scratch`.
  savedTmpdir = process.env.TMPDIR;
  scratch = mkdtempSync(path.join(tmpdir(), 'troupe-journal-dir-'));
  process.env.TMPDIR = scratch;
});
afterEach(() => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
  rmSync(scratch, { recursive: true, force: true });
});

describe('a Supervisor without journalDir', () => {
  const invalid: [string, SupervisorOptions][] = [
    ['threadStartTimeoutMs', { threadStartTimeoutMs: 0 }],
    ['quarantineThreads', { quarantineThreads: 0 }],
    ['quarantineWaitMs', { quarantineWaitMs: 0 }],
    ['fsync', { fsync: 'sometimes' as never }],
    ['maxPendingInstructions', { maxPendingInstructions: 0 }],
    ['retainEndedAgents', { retainEndedAgents: -1 }],
    ['limits.simulated', { limits: { simulated: null as never } }],
  ];
  for (const [option, options] of invalid) {
    it(`refuses an invalid ${option} without leaving a directory behind`, () => {
      expect(() => new Supervisor({ threads: 1, ...options })).toThrow(
        expect.objectContaining({ code: 'invalid_option', fields: { option } }),
      );
      expect(readdirSync(scratch)).toEqual([]);
    });
  }

  it('creates one temporary journal directory and removes it on close', async () => {
    const supervisor = new Supervisor({ threads: 1, providers: { simulated: { kind: 'simulated' } } });
    const created = readdirSync(scratch);
    expect(created).toHaveLength(1);
    expect(created[0]).toMatch(/^troupe-journals-/);
    await supervisor.close();
    expect(readdirSync(scratch)).toEqual([]);
  });
});
