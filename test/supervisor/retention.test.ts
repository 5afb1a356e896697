/**
 * How many ended agents a Supervisor keeps (`retainEndedAgents`), what a lookup of an evicted one
 * answers, and that nothing an agent still running needs is evicted.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { prepareSupervisorOptions } from '../../src/supervisor/options.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { orchestratorDefinition, policySupervisor, tempDir } from './helpers.ts';

const SIMULATED = { simulated: { kind: 'simulated' } } as const;

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

describe('retainEndedAgents', () => {
  it('keeps the most recently ended agents up to the limit; an evicted one is unknown, its handle still works', async () => {
    supervisor = new Supervisor({ threads: 1, cwd: tempDir(), providers: SIMULATED, retainEndedAgents: 3 });
    const ended: string[] = [];
    supervisor.on('agent:completed', (event) => ended.push(event.agentId));
    const handles = Array.from({ length: 20 }, (_, i) =>
      supervisor?.spawn('worker', { id: `item-${i}`, task: `Report on item ${i}.` }),
    ).filter((handle) => handle !== undefined);
    const outcomes = await Promise.all(handles.map((handle) => handle.result));
    expect(outcomes.every((outcome) => outcome.status === 'completed')).toBe(true);
    expect(ended).toHaveLength(20);

    expect(supervisor.agentCount).toBe(3);
    const kept = ended.slice(-3);
    for (const id of kept) expect(supervisor.handle(id)?.id).toBe(id);
    const evicted = ended.slice(0, -3);
    for (const id of evicted) {
      expect(supervisor.handle(id)).toBeUndefined();
      expect(supervisor.treeUsage(id)).toBeUndefined();
      await expect(supervisor.instruct(id, 'more')).rejects.toMatchObject({ code: 'agent_not_running' });
    }
    // The handle the caller holds: its result stays settled, send and cancel answer as for any ended agent.
    const held = handles.find((handle) => handle.id === evicted[0]);
    expect((await held?.result)?.status).toBe('completed');
    expect(() => held?.send('more')).toThrow(expect.objectContaining({ code: 'agent_not_running' }));
    expect(() => held?.cancel()).not.toThrow();
    // An id the caller chose stays taken once evicted, as when it was kept.
    expect(() => supervisor?.spawn('worker', { id: `${evicted[0]}`, task: 'Again.' })).toThrow(
      expect.objectContaining({ code: 'duplicate_agent_id' }),
    );
  });

  it('keeps a running orchestrator ended subagents until it ends, whatever the limit', async () => {
    supervisor = policySupervisor({ cwd: tempDir(), retainEndedAgents: 0 });
    const keptWhileParentRuns: boolean[] = [];
    const orchestrator = supervisor.spawn(await orchestratorDefinition(), {
      task: 'Coordinate the workers.',
      provider: 'policy',
    });
    supervisor.on('agent:completed', (event) => {
      if (event.parentId !== orchestrator.id) return;
      // After the end has been handled, eviction included.
      queueMicrotask(() => keptWhileParentRuns.push(supervisor?.handle(event.agentId) !== undefined));
    });
    const outcome = await orchestrator.result;
    expect(outcome.status).toBe('completed');
    expect(keptWhileParentRuns).toEqual([true, true, true, true, true]);
    // Its `await_agents` found every one of them.
    const { workers } = (outcome.status === 'completed' ? outcome.result : undefined) as {
      workers: { status: string }[];
    };
    expect(workers.map((worker) => worker.status)).toEqual(Array(5).fill('completed'));
    expect(supervisor.agentCount).toBe(0);
  });

  it('keeps an ended parent while its child runs, so the child usage rolls up through it', async () => {
    supervisor = new Supervisor({ threads: 1, cwd: tempDir(), providers: SIMULATED, retainEndedAgents: 0 });
    const parent = supervisor.spawn('worker', { task: 'Report.' });
    const child = supervisor.spawn('worker', {
      parent: parent.id,
      task: 'Wait for an instruction, then report.',
    });
    const parentOutcome = await parent.result;
    expect(parentOutcome.status).toBe('completed');
    expect(supervisor.handle(parent.id)).toBeDefined();
    const before = supervisor.treeUsage(parent.id)?.usage.inputTokens ?? 0;
    expect(before).toBe(parentOutcome.usage.inputTokens);
    let rolledUp: number | undefined;
    supervisor.on('agent:completed', (event) => {
      if (event.agentId === child.id) rolledUp = supervisor?.treeUsage(parent.id)?.usage.inputTokens;
    });
    await supervisor.instruct(child.id, 'go');
    expect((await child.result).status).toBe('completed');
    expect(rolledUp).toBeGreaterThan(before);
    // Neither is needed any more.
    expect(supervisor.handle(parent.id)).toBeUndefined();
    expect(supervisor.agentCount).toBe(0);
  });

  it("drops an ended agent's spec: its task and context are not kept by the record it leaves", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    supervisor = new Supervisor({ threads: 1, cwd: tempDir(), providers: SIMULATED });
    let context: string[] | undefined = [`${'large context '.repeat(1000)}`];
    const released = new WeakRef(context);
    const handle = supervisor.spawn('worker', { task: 'Report.', context });
    context = undefined;
    expect((await handle.result).status).toBe('completed');
    expect(supervisor.handle(handle.id)).toBe(handle);
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(released.deref()).toBeUndefined();
  });

  it('is a non-negative integer or Infinity, 1000 by default', () => {
    expect(prepareSupervisorOptions({ journalDir: tempDir() }).retainEndedAgents).toBe(1000);
    expect(
      prepareSupervisorOptions({ journalDir: tempDir(), retainEndedAgents: Number.POSITIVE_INFINITY })
        .retainEndedAgents,
    ).toBe(Number.POSITIVE_INFINITY);
    expect(() => prepareSupervisorOptions({ journalDir: tempDir(), retainEndedAgents: -1 })).toThrow(
      expect.objectContaining({ code: 'invalid_option', fields: { option: 'retainEndedAgents' } }),
    );
  });

  it('refuses a grace, restart or heartbeat time past the longest timer delay, which Node would fire at once', () => {
    const cases: [string, Record<string, unknown>][] = [
      ['graceMs', { graceMs: 2 ** 31 }],
      ['restart.baseDelayMs', { restart: { baseDelayMs: 2 ** 31 } }],
      ['restart.maxDelayMs', { restart: { maxDelayMs: 2 ** 31 } }],
      ['heartbeat.intervalMs', { heartbeat: { intervalMs: 2 ** 31, timeoutMs: 2 ** 31 } }],
      ['heartbeat.timeoutMs', { heartbeat: { timeoutMs: 2 ** 31 } }],
    ];
    for (const [option, given] of cases) {
      expect(() => prepareSupervisorOptions({ journalDir: tempDir(), ...given })).toThrow(
        expect.objectContaining({ code: 'invalid_option', fields: { option } }),
      );
    }
    expect(prepareSupervisorOptions({ journalDir: tempDir(), graceMs: 2 ** 31 - 1 }).graceMs).toBe(
      2 ** 31 - 1,
    );
  });

  it('refuses an option it does not know, with the one it may have meant', () => {
    // A misspelt runLimits would otherwise leave the run without a budget, without a word.
    const misspelt = { journalDir: tempDir(), runLimit: { maxTotalTokens: 1000 } };
    expect(() => prepareSupervisorOptions(misspelt as never)).toThrow(
      expect.objectContaining({
        code: 'invalid_option',
        fields: { option: 'runLimit' },
        message: expect.stringMatching(
          /^Unknown Supervisor option `runLimit` \(did you mean `runLimits`\?\); known: backend, /,
        ),
      }),
    );
    expect(() => new Supervisor({ threds: 2 } as never)).toThrow(/`threds` \(did you mean `threads`\?\)/);
  });
});
