/**
 * A batching writer whose write fails. The failure is made real, not mocked: the test closes the
 * writer's file descriptor behind its back (found through /proc, so Linux only), and the next
 * write fails with EBADF.
 */
import { closeSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JournalWriter } from '../../src/journal/writer.ts';
import { AGENT_ID, FakeAgent } from './helpers.ts';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-journal-batch-fail-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Closes this process's descriptor of `file`, as a failing disk would leave the writer. */
function pullDescriptor(file: string): void {
  for (const entry of readdirSync('/proc/self/fd')) {
    let target = '';
    try {
      target = readlinkSync(`/proc/self/fd/${entry}`);
    } catch {
      continue;
    }
    if (target === file) {
      closeSync(Number(entry));
      return;
    }
  }
  throw new Error(`no descriptor open for ${file}`);
}

describe.runIf(process.platform === 'linux')('a batching journal writer whose write fails', () => {
  it('throws journal_io from the commit before the side effect, and closes', () => {
    const file = path.join(dir, 'agent.jsonl');
    const writer = JournalWriter.open(file, { batch: true });
    new FakeAgent(writer).start();
    pullDescriptor(file);
    expect(() => writer.commit()).toThrow(expect.objectContaining({ code: 'journal_io' }));
    expect(writer.closed).toBe(true);
  });

  it('reports a failure of a background write (commitAll, as at the end of a turn) to the next append', () => {
    const file = path.join(dir, 'agent.jsonl');
    const writer = JournalWriter.open(file, { batch: true });
    new FakeAgent(writer).start();
    pullDescriptor(file);
    // Synchronously, so no other open can take the pulled descriptor's number meanwhile.
    expect(() => JournalWriter.commitAll()).not.toThrow();
    expect(writer.closed).toBe(true);
    expect(() => writer.append({ type: 'Waiting', agentId: AGENT_ID, callId: 'c1', index: 0 })).toThrow(
      expect.objectContaining({ code: 'journal_io' }),
    );
  });
});
