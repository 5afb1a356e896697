/**
 * The core of both engines' child indexes (src/engines/parent-heads.ts): heads by the parent they
 * name, each journal recorded once, and a search's cut at its bound.
 */
import { describe, expect, it } from 'vitest';
import { ParentHeads } from '../../src/engines/parent-heads.ts';

describe('ParentHeads', () => {
  it('examines the first maxJournals naming the parent, and names the rest and every too-long one', () => {
    const heads = new ParentHeads();
    heads.add('a', { agentId: 'a', parentId: 'p', spawnCallId: 'c1' });
    heads.add('long', 'too_long');
    heads.add('top', { agentId: 'top' });
    heads.add('none', undefined);
    heads.add('b', { agentId: 'b', parentId: 'p' });
    heads.add('other', { agentId: 'other', parentId: 'q' });
    heads.add('c', { agentId: 'c', parentId: 'p' });

    expect(heads.cut('p', { maxJournals: 2 })).toEqual({
      examine: [
        { name: 'a', head: { agentId: 'a', parentId: 'p', spawnCallId: 'c1' } },
        { name: 'b', head: { agentId: 'b', parentId: 'p' } },
      ],
      notExamined: ['long', 'c'],
    });
    expect(heads.cut('nobody', { maxJournals: 2 })).toEqual({ examine: [], notExamined: ['long'] });
    expect(heads.cut('p', { maxJournals: 0 }).notExamined).toEqual(['long', 'a', 'b', 'c']);
    for (const name of ['a', 'long', 'top', 'none']) expect(heads.has(name)).toBe(true);
    expect(heads.has('unread')).toBe(false);
  });

  it('keeps the first head recorded for a journal (overlapping searches may read it twice)', () => {
    const heads = new ParentHeads();
    heads.add('a', { agentId: 'a', parentId: 'p' });
    heads.add('a', { agentId: 'a', parentId: 'p' });
    heads.add('a', 'too_long');
    expect(heads.cut('p', { maxJournals: 10 })).toEqual({
      examine: [{ name: 'a', head: { agentId: 'a', parentId: 'p' } }],
      notExamined: [],
    });
  });
});
