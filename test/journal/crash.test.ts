import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJournal } from '../../src/journal/reader.ts';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { spawnChild } from '../fixtures/children.ts';

const fixture = fileURLToPath(new URL('./fixtures/append-until-killed.ts', import.meta.url));

/** Runs the appender until it reports `killAfterSeq`, SIGKILLs it, and returns the last seq it reported. */
function appendThenKill(file: string, policy: string, killAfterSeq: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawnChild(process.execPath, ['--import', 'tsx', fixture, file, policy], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let lastSeq = -1;
    let buffered = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) lastSeq = Math.max(lastSeq, Number(line));
      if (lastSeq >= killAfterSeq) child.kill('SIGKILL');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (_code, signal) => {
      if (signal === 'SIGKILL') resolve(lastSeq);
      else reject(new Error(`appender exited without being killed: ${stderr}`));
    });
  });
}

describe('a journal written by a process that is SIGKILLed', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-journal-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['always', 'never'])(
    'fsync %s: keeps every acknowledged event, verifies, and continues after a restart',
    async (policy) => {
      const file = path.join(dir, 'agent.jsonl');
      const acknowledged = await appendThenKill(file, policy, 40);
      const afterCrash = readJournal(file);
      expect(afterCrash.problems).toEqual([]);
      expect(afterCrash.events.length).toBeGreaterThan(acknowledged);
      expect(verifyJournalFile(file).ok).toBe(true);

      const resumedAck = await appendThenKill(file, policy, afterCrash.events.length + 20);
      const afterRestart = readJournal(file);
      expect(afterRestart.problems).toEqual([]);
      expect(afterRestart.events.length).toBeGreaterThan(resumedAck);
      expect(afterRestart.events.slice(0, afterCrash.events.length)).toEqual(afterCrash.events);
      expect(verifyJournalFile(file)).toMatchObject({ ok: true });
    },
  );
});
