import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentOutcome } from '../../src/loop/types.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { orchestratorDefinition, policySupervisor, tempDir } from './helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

function resultOf(outcome: AgentOutcome): Record<string, unknown> {
  if (outcome.status !== 'completed')
    throw new Error(`agent failed: ${outcome.reason}: ${outcome.error.message}`);
  return outcome.result as Record<string, unknown>;
}

describe('Supervisor fan-out', () => {
  it('runs 200 agents over 2 threads and every one completes with its own result', async () => {
    const cwd = tempDir();
    for (let i = 0; i < 10; i += 1)
      writeFileSync(path.join(cwd, `file${i}.md`), `# File ${i}\ncontent ${i}\n`);
    supervisor = new Supervisor({ threads: 2, cwd });
    const hosts = new Set<number>();
    supervisor.on('agent:started', (e) => hosts.add(e.hostId));
    const specs = Array.from({ length: 200 }, (_, i) => ({
      agent: 'worker',
      task: `Review file${i % 10}.md (item ${i}).`,
    }));
    const streamed: number[] = [];
    const run = supervisor.fanOut(specs);
    for await (const result of run) streamed.push(result.index);
    const results = await run.all();
    expect(streamed.sort((a, b) => a - b)).toEqual(specs.map((_, i) => i));
    expect(hosts.size).toBe(2);
    for (const [i, result] of results.entries()) {
      expect(result.index).toBe(i);
      const value = resultOf(result.outcome);
      expect(value.files).toEqual([`file${i % 10}.md`]);
      expect(String(value.summary)).toContain(`(item ${i})`);
    }
  });

  it('keeps every partial result when some agents fail', async () => {
    supervisor = new Supervisor({ threads: 2, cwd: tempDir() });
    const results = await supervisor
      .fanOut([
        { agent: 'worker', task: 'a' },
        { agent: 'no-such-agent', task: 'b' },
        { agent: 'worker', task: 'c' },
      ])
      .all();
    expect(results.map((r) => r.outcome.status)).toEqual(['completed', 'failed', 'completed']);
    expect(results[1]?.outcome).toMatchObject({
      reason: 'invalid_request',
      error: { code: 'unknown_agent' },
    });
  });

  it('one stream of typed events carries every agent, nested ones with their parent id', async () => {
    supervisor = policySupervisor({ cwd: tempDir() });
    const spawned: { agentId: string; parentId: string | undefined; agent: string }[] = [];
    supervisor.on('agent:spawned', (e) => spawned.push(e));
    const rounds = new Set<string>();
    supervisor.on('agent:round', (e) => rounds.add(e.agentId));
    const orchestrator = supervisor.spawn(
      { ...(await orchestratorDefinition()) },
      { task: 'Coordinate the workers.', provider: 'policy' },
    );
    const outcome = await orchestrator.result;
    expect(outcome.status).toBe('completed');
    const children = spawned.filter((e) => e.parentId === orchestrator.id);
    expect(children).toHaveLength(5);
    for (const child of children) expect(rounds.has(child.agentId)).toBe(true);
    const tree = supervisor.treeUsage(orchestrator.id);
    expect(tree?.usage.inputTokens).toBeGreaterThan(outcome.usage.inputTokens);
  });
});

describe('orchestration over wait_for_instruction and complete_task', () => {
  it('an orchestrator spawns 5 workers, instructs each twice and collects their results', async () => {
    supervisor = policySupervisor({ cwd: tempDir() });
    const instructed: string[] = [];
    supervisor.on('agent:instructed', (e) => instructed.push(e.text));
    const handle = supervisor.spawn(await orchestratorDefinition(), {
      task: 'Coordinate.',
      provider: 'policy',
    });
    const outcome = await handle.result;
    const result = resultOf(outcome) as {
      workers: { agentId: string; status: string; result: { instructions: string[] } }[];
    };
    expect(result.workers).toHaveLength(5);
    for (const worker of result.workers) {
      expect(worker.status).toBe('completed');
      expect(worker.result.instructions).toEqual([
        `Instruction: instruction 1 for ${worker.agentId}`,
        `Instruction: instruction 2 for ${worker.agentId}`,
      ]);
    }
    expect(instructed).toHaveLength(10);
  });
});
