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
    rollUpUsage(agents, ended, usage(10), 0.5);
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
    rollUpUsage(agents, ended, usage(4), 0.1);
    expect(agents.get('grandchild')).toMatchObject({ treeUsage: { inputTokens: 4 }, treeCostUsd: 0.1 });
    expect(agents.get('root')).toMatchObject({ treeUsage: { inputTokens: 0 }, treeCostUsd: 0 });
  });
});
