import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { orchestratorDefinition, policySupervisor, tempDir } from './helpers.ts';

describe('limits of subagents spawned with spawn_agent', () => {
  it("a subagent runs under its parent's limits, as a plan's `limits` say for every agent", async () => {
    const journalDir = tempDir();
    const supervisor = policySupervisor({ journalDir, definitions: [await orchestratorDefinition()] });
    const children: string[] = [];
    supervisor.on('agent:spawned', (e) => {
      if (e.parentId !== undefined) children.push(e.agentId);
    });
    try {
      const parent = supervisor.spawn('orchestrator', {
        task: 'Coordinate the workers.',
        provider: 'policy',
        limits: { maxSteps: 20, maxTotalTokens: 123_456, wallClockMs: 60_000 },
      });
      expect(await parent.result).toMatchObject({ status: 'completed' });
      expect(children.length).toBeGreaterThan(0);
      for (const id of children) {
        const started = JSON.parse(
          readFileSync(path.join(journalDir, `${id}.jsonl`), 'utf8').split('\n')[0] ?? '{}',
        ) as { type: string; limits: Record<string, number> };
        expect(started.type).toBe('Started');
        // Without the fix the child ran with the defaults: 1,000,000 tokens, no time limit.
        expect(started.limits).toMatchObject({ maxSteps: 20, maxTotalTokens: 123_456, wallClockMs: 60_000 });
      }
    } finally {
      await supervisor.close();
    }
  });
});

describe('orchestration.maxSubagents', () => {
  it("bounds the subagents of a root agent's whole tree; a refused spawn_agent tells the model the bound", async () => {
    const journalDir = tempDir();
    // Every agent orchestrates: each asks for 5 subagents, two levels deep (5 + 25 without a bound).
    const worker = { ...(await orchestratorDefinition()), name: 'worker' };
    const supervisor = policySupervisor({
      journalDir,
      definitions: [worker],
      orchestration: { maxDepth: 2, maxSubagents: 7 },
    });
    let subagents = 0;
    supervisor.on('agent:spawned', (e) => {
      if (e.parentId !== undefined) subagents += 1;
    });
    try {
      const root = supervisor.spawn('worker', { task: 'Coordinate the workers.', provider: 'policy' });
      await root.result;
      expect(subagents).toBe(7);
      const journals = readdirSync(journalDir).map((f) => readFileSync(path.join(journalDir, f), 'utf8'));
      expect(
        journals.some((j) => j.includes('already has 7 subagents (the limit, orchestration.maxSubagents)')),
      ).toBe(true);
    } finally {
      await supervisor.close();
    }
  });

  it('is checked like the other orchestration limits', () => {
    expect(() => policySupervisor({ orchestration: { maxSubagents: -1 } })).toThrow(
      expect.objectContaining({ code: 'invalid_option', fields: { option: 'orchestration.maxSubagents' } }),
    );
  });
});
