/**
 * `troupe resume`'s search for agents spawned by agents (resume-plan.ts `nestedAgents`) reads the
 * ids of every journal that is not a plan entry's or a judge's, however many: a run with more
 * subagents than MAX_ADOPTION_SCAN_JOURNALS leaves none of them unexamined (and without a line).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_ADOPTION_SCAN_JOURNALS } from '../../src/constants.ts';
import type { AuditEventInput } from '../../src/journal/events.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import type { ResumeLine } from '../../src/run-dir/result-store.ts';
import { planResume } from '../../src/run-dir/resume-plan.ts';
import type { RunDirPaths } from '../../src/run-dir/run-dir.ts';
import type { RunPlan } from '../../src/run-dir/run-plan.ts';
import { FakeAgent } from '../journal/helpers.ts';
import { tempDir } from './helpers.ts';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('troupe-nested-scan-'));
  mkdirSync(path.join(dir, 'journals'));
});
afterEach(() => cleanup());

/** The body of a Started event, to write as any agent's. */
function startedBody(): AuditEventInput {
  const memory = new MemoryJournal();
  new FakeAgent(memory).start();
  const [started] = memory.events;
  if (started?.type !== 'Started') throw new Error('FakeAgent wrote no Started event');
  const { seq: _seq, ts: _ts, prev: _prev, hash: _hash, ...body } = started;
  return body as AuditEventInput;
}

describe('troupe resume: nested agents of a large run', () => {
  it('examines every subagent journal past 10,000 of them, and still ends an orphan among them', () => {
    const journals = path.join(dir, 'journals');
    // The plan entry ended (its line is final): an unfinished child of it is an orphan, to end.
    const entry = JournalWriter.open(path.join(journals, 'pfx-0.jsonl'), { fsync: 'never' });
    entry.append({ ...startedBody(), agentId: 'pfx-0' } as AuditEventInput);
    entry.close();
    const orphan = JournalWriter.open(path.join(journals, 'pfx-0-open.jsonl'), { fsync: 'never' });
    orphan.append({ ...startedBody(), agentId: 'pfx-0-open', parentId: 'pfx-0' } as AuditEventInput);
    orphan.close();
    // Finished children with their lines: only the head of each is read (canonical JSON, sorted).
    const count = MAX_ADOPTION_SCAN_JOURNALS + 3;
    const lines: ResumeLine[] = [{ index: 0, agentId: 'pfx-0', attempt: 1, status: 'completed' }];
    for (let i = 0; i < count; i += 1) {
      const agentId = `pfx-0-child-${i}`;
      writeFileSync(
        path.join(journals, `${agentId}.jsonl`),
        `${JSON.stringify({ agentId, parentId: 'pfx-0', spawnCallId: `call-${i}`, type: 'Started' })}\n`,
      );
      lines.push({ index: null, agentId, attempt: 1, status: 'completed' });
    }
    const plan = { idPrefix: 'pfx', runs: [{ index: 0, agent: 'worker' }] } as unknown as RunPlan;
    const paths = { journals } as RunDirPaths;

    const decision = planResume(plan, paths, lines);

    // Before, the scan stopped at 10,000 journals and named the rest not examined (a warning, and a
    // subagent among them got no line).
    expect(decision.notExamined).toEqual([]);
    expect(decision.orphans.map((o) => o.agentId)).toEqual(['pfx-0-open']);
    expect(decision.work).toEqual([]);
  });
});
