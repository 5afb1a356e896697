import { describe, expect, it } from 'vitest';
import type { ReportAgent } from '../../src/run-dir/timeline.ts';
import { findAgent } from '../../src/run-dir/transcript-text.ts';

/** Only what findAgent reads. */
function agent(agentId: string, index: number | null, label: string | undefined, attempt = 1): ReportAgent {
  return { agentId, index, label, attempt } as ReportAgent;
}

describe('findAgent', () => {
  const agents = [
    agent('aaa111', 0, 'q1'),
    agent('aaa111-r2', 0, 'q1', 2),
    agent('bbb222', 1, 'dup'),
    agent('ccc333', 2, 'dup'),
    agent('ddd444', null, undefined),
  ];

  it('takes the last attempt of the one plan entry a label names', () => {
    expect(findAgent(agents, 'q1')).toMatchObject({ agentId: 'aaa111-r2' });
    expect(findAgent(agents, '0')).toMatchObject({ agentId: 'aaa111-r2' });
  });

  it('returns every entry a label shared by several plan entries names, so the caller says it is ambiguous', () => {
    expect(findAgent(agents, 'dup')).toEqual([agents[2], agents[3]]);
  });

  it('finds by id and unique prefix, and lists what a shared prefix matches', () => {
    expect(findAgent(agents, 'ccc333')).toBe(agents[3]);
    expect(findAgent(agents, 'ddd')).toBe(agents[4]);
    expect(findAgent(agents, 'aaa1…')).toEqual([agents[0], agents[1]]);
    expect(findAgent(agents, 'zzz')).toEqual([]);
  });
});
