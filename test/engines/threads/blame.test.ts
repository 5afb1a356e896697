import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pendingWork } from '../../../src/engines/threads/blame.ts';
import { isTerminal } from '../../../src/journal/events.ts';
import { readJournal } from '../../../src/journal/reader.ts';
import type { AgentHandle } from '../../../src/supervisor/agent-handle.ts';
import type { AgentRestarted, ThreadCrashed } from '../../../src/supervisor/events.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { fixtures, policySupervisor, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

const line = (event: Record<string, unknown>): string => `${JSON.stringify(event)}\n`;

describe('reading the blame for a thread death from a journal', () => {
  it('names the tool calls that started and did not finish, leaving out calls that wait elsewhere', async () => {
    const file = path.join(tempDir(), 'agent.jsonl');
    writeFileSync(
      file,
      line({ type: 'Started', seq: 0 }) +
        line({ type: 'ToolCall', seq: 1, callId: 'c1', name: 'read_file' }) +
        line({ type: 'ToolResult', seq: 2, callId: 'c1', name: 'read_file' }) +
        line({ type: 'ToolCall', seq: 3, callId: 'c2', name: 'wait_for_instruction' }) +
        line({ type: 'ToolCall', seq: 4, callId: 'c3', name: 'bash' }) +
        '{"type":"ToolResult","seq":5,"callId":"c3"', // torn by the death
    );
    expect(await pendingWork(file, new Set(['wait_for_instruction']))).toEqual({
      running: ['bash'],
      waiting: true,
    });
    expect(await pendingWork(file, new Set())).toEqual({
      running: ['wait_for_instruction', 'bash'],
      waiting: false,
    });
    expect(await pendingWork(path.join(tempDir(), 'missing.jsonl'), new Set())).toEqual({
      running: [],
      waiting: false,
    });
  });

  it('reads only the tail of a long journal', async () => {
    const file = path.join(tempDir(), 'long.jsonl');
    const filler = line({ type: 'HistoryAppended', text: 'x'.repeat(1 << 20) });
    writeFileSync(file, filler + filler + line({ type: 'ToolCall', callId: 'late', name: 'grep' }));
    expect(await pendingWork(file, new Set())).toEqual({ running: ['grep'], waiting: false });
  });
});

describe('a thread death is charged to the agent that caused it', () => {
  it('a tool that kills its shared thread on every call fails its own agent; 10 bystanders on that thread complete', async () => {
    const cwd = tempDir();
    supervisor = policySupervisor({
      cwd,
      threads: 1,
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      restart: { maxRetries: 3, baseDelayMs: 10, maxDelayMs: 50 },
    });
    const sup = supervisor;
    const crashes: ThreadCrashed[] = [];
    const restarts: AgentRestarted[] = [];
    sup.on('thread:crashed', (event) => crashes.push(event));
    sup.on('agent:restarted', (event) => restarts.push(event));
    const waiting = new Set<string>();
    let allWaiting: () => void = () => {};
    const tenWaiting = new Promise<void>((resolve) => {
      allWaiting = resolve;
    });
    sup.on('agent:waiting', (event) => {
      waiting.add(event.agentId);
      if (waiting.size === 10) allWaiting();
    });
    const bystanders: AgentHandle[] = Array.from({ length: 10 }, (_, i) =>
      sup.spawn('worker', {
        task: `Bystander ${i}: wait for 1 instruction, then report.`,
        provider: 'simulated',
      }),
    );
    await tenWaiting;

    const poisoned = sup.spawn('worker', { task: 'keep calling poison' });
    const outcome = await poisoned.result;
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'crashed',
      error: { code: 'thread_crashed', fields: { crashes: 4, tools: ['poison'] } },
    });
    expect(outcome.status === 'failed' ? outcome.error.message : '').toContain('`poison`');

    for (const [i, handle] of bystanders.entries()) handle.send(`go ${i}`);
    const results = await Promise.all(bystanders.map((handle) => handle.result));
    expect(results.map((result) => result.status)).toEqual(Array(10).fill('completed'));

    // The first death (on the shared thread) took the bystanders; the poisoned agent then ran
    // alone, on a quarantine thread, for the three that followed.
    const ids = new Set(bystanders.map((handle) => handle.id));
    expect(crashes.map((crash) => crash.agents.some((id) => ids.has(id)))).toEqual([
      true,
      false,
      false,
      false,
    ]);
    expect(crashes.every((crash) => crash.agents.includes(poisoned.id))).toBe(true);
    const bystanderRestarts = restarts.filter((event) => ids.has(event.agentId));
    expect(bystanderRestarts).toHaveLength(10);
    expect(bystanderRestarts.every((event) => !event.charged)).toBe(true);
    expect(restarts.filter((event) => event.agentId === poisoned.id).map((event) => event.charged)).toEqual([
      true,
      true,
      true,
    ]);
    const log = readFileSync(path.join(cwd, '.faults', 'executions.log'), 'utf8');
    expect(log.split('\n').filter((entry) => entry === `${poisoned.id} poison`)).toHaveLength(4);
  });

  it("a provider that blocks its thread is charged from the thread's stack, not the agents awaiting an async tool", async () => {
    const cwd = tempDir();
    supervisor = policySupervisor({
      cwd,
      threads: 1,
      // 3 s, not 1: the nappers' first usage estimate loads the o200k table on the thread, which on
      // a loaded machine (two busy loops beside the suite) took over a second, and that death was
      // charged from a stack in the tokenizer instead of the spinning provider.
      heartbeat: { intervalMs: 100, timeoutMs: 3000 },
      providers: { spin: { kind: 'module', module: path.join(fixtures, 'spin-provider.ts') } },
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      restart: { maxRetries: 1, baseDelayMs: 10, maxDelayMs: 50 },
    });
    const sup = supervisor;
    const crashes: ThreadCrashed[] = [];
    const restarts: AgentRestarted[] = [];
    sup.on('thread:crashed', (event) => crashes.push(event));
    sup.on('agent:restarted', (event) => restarts.push(event));
    const nappers = Array.from({ length: 4 }, (_, i) =>
      sup.spawn('worker', { task: `Napper ${i}: keep calling nap`, provider: 'spin' }),
    );
    const spinner = sup.spawn('worker', { task: 'spin', provider: 'spin' });
    const outcome = await spinner.result;
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'crashed',
      error: { code: 'heartbeat_timeout' },
    });
    const message = outcome.status === 'failed' ? outcome.error.message : '';
    expect(message).toContain("crashed 2 times while its provider's code held it");
    expect(message).toMatch(/it was running spinForever \(file:\/\/\S*spin-provider\.ts:\d+:\d+\)/);

    // The first death, on the shared thread, took the nappers too: they restart uncharged.
    const ids = new Set(nappers.map((handle) => handle.id));
    const shared = crashes.find((crash) => crash.agents.some((id) => ids.has(id)));
    expect(shared?.cause).toMatchObject({
      code: 'heartbeat_timeout',
      fields: { culprit: path.join(fixtures, 'spin-provider.ts') },
    });
    const napperRestarts = restarts.filter((event) => ids.has(event.agentId));
    expect(napperRestarts.length).toBeGreaterThan(0);
    expect(napperRestarts.filter((event) => event.charged)).toEqual([]);
    expect(restarts.filter((event) => event.agentId === spinner.id).map((event) => event.charged)).toEqual([
      true,
    ]);
  });

  it('a thread terminated because a cancelled agent did not stop charges none of its other agents', async () => {
    // The cancelled agent's tool blocks its thread, so the grace period after the cancel ends with
    // the thread terminated (cancel_timeout). Its other agent was in a tool of its own: no evidence
    // that it killed the thread, yet it was charged, quarantined, and with no restarts allowed failed.
    const journalDir = tempDir();
    supervisor = policySupervisor({
      cwd: tempDir(),
      journalDir,
      threads: 1,
      graceMs: 200,
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      restart: { maxRetries: 0, baseDelayMs: 10, maxDelayMs: 50 },
    });
    const sup = supervisor;
    const restarts: AgentRestarted[] = [];
    sup.on('agent:restarted', (event) => restarts.push(event));
    const toolStarted = (handle: AgentHandle): Promise<void> =>
      new Promise((resolve) => {
        handle.on('tool', (event) => {
          if (event.phase === 'started') resolve();
        });
      });
    const holder = sup.spawn('worker', { task: 'call hold' });
    await toolStarted(holder);
    const stubborn = sup.spawn('worker', { task: 'call block_after_report' });
    await toolStarted(stubborn);
    stubborn.cancel('the test cancels it');

    expect(await stubborn.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
    // Its loop died with the thread: the engine journals the cancel once the thread is gone.
    const ending = () => readJournal(path.join(journalDir, `${stubborn.id}.jsonl`)).events.filter(isTerminal);
    await vi.waitFor(() => expect(ending()).toHaveLength(1), { timeout: 15_000, interval: 20 });
    expect(ending()[0]).toMatchObject({
      type: 'Failed',
      reason: 'cancelled',
      error: { code: 'cancelled', fields: { reason: 'the test cancels it' } },
    });
    // Its hold call was interrupted by the restart; it then completes.
    expect(await holder.result).toMatchObject({ status: 'completed' });
    expect(restarts.map((event) => [event.agentId, event.charged, event.cause.code])).toEqual([
      [holder.id, false, 'cancel_timeout'],
    ]);
  });

  it('two agents that kill their threads both fail with their own cause; neither waits for ever for the quarantine thread', async () => {
    // With one quarantine thread, the second charged agent waits for it while the first runs
    // there. When the first failed for good (its thread dead, no agent left running), no
    // scheduling pass ran: the second was never placed and its result never settled.
    supervisor = policySupervisor({
      threads: 1,
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      restart: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 50 },
    });
    const sup = supervisor;
    const poisoned = [
      sup.spawn('worker', { task: 'keep calling poison' }),
      sup.spawn('worker', { task: 'keep calling poison' }),
    ];
    const outcomes = await Promise.race([
      Promise.all(poisoned.map((handle) => handle.result)),
      // A bound for the hang this case is about, not a timing claim: generous, for loaded machines
      // (20 s was once not enough for 3 thread starts with 7 processes on 2 cores).
      new Promise<'unsettled'>((resolve) => setTimeout(() => resolve('unsettled'), 90_000).unref()),
    ]);
    expect(outcomes).not.toBe('unsettled');
    for (const outcome of outcomes as Awaited<(typeof poisoned)[number]['result']>[]) {
      expect(outcome).toMatchObject({
        status: 'failed',
        reason: 'crashed',
        error: { code: 'thread_crashed', fields: { crashes: 3, tools: ['poison'] } },
      });
    }
  });

  it('a quarantined agent whose thread is terminated again gets a new quarantine thread, not a wait for one', async () => {
    // The heartbeat has the blocked thread terminated; it exits only when its system call returns.
    // piscina counted it until then, and the next quarantine thread, asked for meanwhile, was
    // queued for a thread that never came (every other thread runs a host for good):
    // thread_start_timeout after 60 s idle.
    supervisor = policySupervisor({
      threads: 1,
      // 3 s, half the tool's 6 s system call: on a loaded machine (CI with neighbours) a thread
      // starting up missed 1.5 s of beats before the tool ran, and the death was not the tool's.
      heartbeat: { intervalMs: 100, timeoutMs: 3000 },
      threadStartTimeoutMs: 15_000,
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      restart: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 50 },
    });
    const crashes: ThreadCrashed[] = [];
    supervisor.on('thread:crashed', (event) => crashes.push(event));
    const outcome = await supervisor.spawn('worker', { task: 'keep calling block_sync' }).result;
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'crashed',
      error: { code: 'heartbeat_timeout' },
    });
    expect(outcome.status === 'failed' ? outcome.error.message : '').toContain(
      'crashed 3 times while it ran `block_sync`',
    );
    expect(crashes.map((crash) => crash.cause.code)).toEqual(Array(3).fill('heartbeat_timeout'));
  });
});
