/**
 * The ids of a journal's first line, read from its head in constant memory: a search for an
 * agent's children finds it however long its `Started` line is, and says when its bound came first.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/journal/canonical-json.ts';
import { readStartedHead, startedHeadOf } from '../../src/journal/started-head.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-head-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const line = (body: Record<string, unknown>) => `${canonicalJson({ type: 'Started', seq: 0, ...body })}\n`;

describe('readStartedHead', () => {
  it('reads agentId, parentId and spawnCallId past megabytes of context, not the task after them', () => {
    const file = path.join(dir, 'c.jsonl');
    writeFileSync(
      file,
      line({
        agentId: 'c',
        context: ['x'.repeat(3 * 1024 * 1024)],
        metadata: { note: 'a "parentId":"decoy" in a string, and \\" escapes' },
        parentId: 'p',
        spawnCallId: 'call-1',
        task: `${'t'.repeat(1024)}"`,
      }),
    );
    expect(readStartedHead(file, 8 * 1024 * 1024)).toEqual({
      agentId: 'c',
      parentId: 'p',
      spawnCallId: 'call-1',
    });
  });

  it('takes a top-level member only, never one nested in an object', () => {
    const text = line({ agentId: 'c', metadata: { parentId: 'nested' }, model: 'm' });
    expect(startedHeadOf(text)).toEqual({ agentId: 'c' });
  });

  it('says too_long when its bound comes before the ids, and nothing for a torn or foreign line', () => {
    const file = path.join(dir, 'big.jsonl');
    writeFileSync(file, line({ agentId: 'c', context: ['x'.repeat(200_000)], parentId: 'p' }));
    expect(readStartedHead(file, 100_000)).toBe('too_long');
    const torn = path.join(dir, 'torn.jsonl');
    writeFileSync(torn, '{"agentId":"c","context":["xx');
    expect(readStartedHead(torn, 100_000)).toBeUndefined();
    const foreign = path.join(dir, 'foreign.jsonl');
    writeFileSync(foreign, '["agentId","c"]\n');
    expect(readStartedHead(foreign, 100_000)).toBeUndefined();
    expect(readStartedHead(path.join(dir, 'missing.jsonl'), 100_000)).toBeUndefined();
  });
});
