import { describe, expect, it } from 'vitest';
import type { Usage } from '../../src/providers/types.ts';
import { rollUpUsage, type UsageNode } from '../../src/supervisor/usage-tree.ts';

const usage = (inputTokens: number): Usage => ({
  inputTokens,
  outputTokens: 1,
  cachedInputTokens: 0,
  reasoningTokens: 0,
});
const zero = usage(0);
const node = (parentId: string | undefined): UsageNode => ({
  spec: { parentId },
  treeUsage: { ...zero, outputTokens: 0 },
  treeCostUsd: 0,
});

describe('rollUpUsage', () => {
  it("adds an ended agent's usage to itself and every ancestor", () => {
    const agents = new Map([
      ['root', node(undefined)],
      ['child', node('root')],
      ['grandchild', node('child')],
      ['sibling', node('root')],
    ]);
    const ended = agents.get('grandchild');
    if (!ended) throw new Error('missing');
    rollUpUsage(agents, ended, { usage: usage(10), costUsd: 0.5 });
    for (const id of ['root', 'child', 'grandchild']) {
      expect(agents.get(id)).toMatchObject({
        treeUsage: { inputTokens: 10, outputTokens: 1 },
        treeCostUsd: 0.5,
      });
    }
    expect(agents.get('sibling')).toMatchObject({ treeUsage: { inputTokens: 0 }, treeCostUsd: 0 });
  });

  it('stops at the first ancestor the supervisor no longer knows', () => {
    const agents = new Map([
      ['root', node(undefined)],
      ['grandchild', node('gone')],
    ]);
    const ended = agents.get('grandchild');
    if (!ended) throw new Error('missing');
    rollUpUsage(agents, ended, { usage: usage(4), costUsd: 0.1 });
    expect(agents.get('grandchild')).toMatchObject({ treeUsage: { inputTokens: 4 }, treeCostUsd: 0.1 });
    expect(agents.get('root')).toMatchObject({ treeUsage: { inputTokens: 0 }, treeCostUsd: 0 });
  });

  it("adds a retry's inherited spend to the retry's own tree only: its ancestors had it from the failed attempt", () => {
    const agents = new Map([
      ['root', node(undefined)],
      ['parent', node('root')],
      ['failed', node('parent')],
      ['retry', node('parent')],
    ]);
    const failed = agents.get('failed');
    const retry = agents.get('retry');
    if (!failed || !retry) throw new Error('missing');
    // The failed attempt made two requests (20 tokens in, $0.2); the retry continued its journal
    // and made one more (10 in, $0.1): its outcome holds all three.
    rollUpUsage(agents, failed, { usage: usage(20), costUsd: 0.2 });
    rollUpUsage(agents, retry, {
      usage: usage(30),
      costUsd: 0.3,
      inherited: { usage: usage(20), costUsd: 0.2 },
    });
    expect(agents.get('retry')).toMatchObject({ treeUsage: { inputTokens: 30 } });
    expect(agents.get('retry')?.treeCostUsd).toBeCloseTo(0.3, 12);
    for (const id of ['root', 'parent']) {
      expect(agents.get(id)?.treeUsage.inputTokens).toBe(30);
      expect(agents.get(id)?.treeCostUsd).toBeCloseTo(0.3, 12);
    }
  });
});
