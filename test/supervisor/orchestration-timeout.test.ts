/**
 * A definition's `toolConfig.<tool>.timeoutMs` for an orchestration tool is kept by the supervisor,
 * which knows what a call it abandons did. Before, the thread timed the call too: at
 * `spawn_agent: { timeoutMs: 1 }` the model was told the call was abandoned while the child it had
 * started ran on, and nobody could ever await or instruct it (the model never got its id).
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runOrchestrationTool } from '../../src/supervisor/orchestration.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import type { ToolOutcome } from '../../src/tools/types.ts';
import { fixtures, orchestratorDefinition, policySupervisor, tempDir } from './helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

/** Blocks this (the supervisor's) thread for `ms`, so an answer to a thread waits that long. */
function blockMainThread(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe("an orchestration tool's time limit", () => {
  it('never abandons a spawn_agent: the model gets the id of every child it started, and awaits it', async () => {
    const orchestrator = await orchestratorDefinition();
    supervisor = policySupervisor({ journalDir: tempDir(), definitions: [orchestrator] });
    const children: string[] = [];
    supervisor.on('agent:spawned', (event) => {
      if (event.parentId === undefined) return;
      children.push(event.agentId);
      // The answer to the thread comes well after the call's 1 ms limit.
      blockMainThread(50);
    });
    const parent = supervisor.spawn(
      { ...orchestrator, toolConfig: { spawn_agent: { timeoutMs: 1 } } },
      { task: 'Coordinate the workers.', provider: 'policy', limits: { maxSteps: 20 } },
    );
    const outcome = await parent.result;
    expect(outcome).toMatchObject({ status: 'completed' });
    const workers = (outcome as { result: { workers: { agentId: string; status: string }[] } }).result
      .workers;
    expect(workers.map((w) => w.agentId).sort()).toEqual([...children].sort());
    expect(workers.every((w) => w.status === 'completed')).toBe(true);
  });

  it('abandons an await_agents, saying which agents still run; they go on', async () => {
    const orchestrator = await orchestratorDefinition();
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      journalDir: tempDir(),
      providers: { abandon: { kind: 'module', module: path.join(fixtures, 'abandon-provider.ts') } },
      definitions: [orchestrator],
      hostTools: {
        hang: {
          description: 'Never answers.',
          parameters: { type: 'object', properties: {} },
          timeoutMs: 0,
          execute: () => new Promise<ToolOutcome>(() => {}),
        },
      },
    });
    const children: string[] = [];
    supervisor.on('agent:spawned', (event) => {
      if (event.parentId !== undefined) children.push(event.agentId);
    });
    const parent = supervisor.spawn(
      { ...orchestrator, toolConfig: { await_agents: { timeoutMs: 100 } } },
      { task: 'Coordinate.', provider: 'abandon', limits: { maxSteps: 5 } },
    );
    const outcome = await parent.result;
    expect(outcome).toMatchObject({ status: 'completed' });
    const [child] = children;
    expect(child).toBeDefined();
    // Before, the thread's timer answered "abandoned. Do not call it again with the same arguments."
    expect((outcome as { result: { awaited: string } }).result.awaited).toBe(
      `await_agents did not finish within 100 ms (its time limit). Still running (they go on; call await_agents again to wait for them): ${child}. Finished: none.`,
    );
  });
});

describe('send_instruction at its time limit', () => {
  it('says the instruction was not withdrawn and may still be delivered', async () => {
    const caller = { id: 'parent', spec: { depth: 0 }, children: ['child'] };
    const child = { id: 'child', state: 'pending', spec: { parentId: 'parent' } };
    const outcome = await runOrchestrationTool(
      'send_instruction',
      { agentId: 'child', text: 'go' },
      {
        caller: caller as never,
        agents: new Map([['child', child as never]]),
        maxDepth: 3,
        maxChildren: 64,
        maxSubagents: 0,
        timeoutMs: 20,
        modelName: 'instruct',
        spawn: () => {
          throw new Error('not spawned here');
        },
        // A child that has not started: its instruction is held until it does.
        instruct: () => new Promise<number>(() => {}),
      },
    );
    expect(outcome).toEqual({
      ok: false,
      text: 'instruct did not finish within 20 ms (its time limit): the instruction for child was not withdrawn and may still be delivered (it is held until the subagent starts). Do not send it again.',
      data: { agentId: 'child', abandoned: true },
    });
  });
});
