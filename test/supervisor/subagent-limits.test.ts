import { readFileSync } from 'node:fs';
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
