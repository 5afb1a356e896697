/**
 * The engine contract: the same cases, through the same Supervisor API, on every engine. An engine
 * that passes them can run any troupe program.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseDefinition } from '../../src/definition/load.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import type { AgentOutcome } from '../../src/loop/types.ts';
import type { AgentUsage, AgentWarnings, SupervisorEvents } from '../../src/supervisor/events.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { executions } from '../fixtures/engines/contract-tools.ts';
import { pids, stdioEverything } from '../mcp/helpers.ts';
import { flakyProvider, harnesses, policyProvider, scriptedProvider } from './contract-harness.ts';

function nextEvent<K extends keyof SupervisorEvents>(
  supervisor: Supervisor,
  name: K,
  test: (event: SupervisorEvents[K][0]) => boolean,
): Promise<SupervisorEvents[K][0]> {
  return new Promise((resolve) => {
    const listener = (...args: SupervisorEvents[K]): void => {
      if (!test(args[0])) return;
      supervisor.off(name, listener as never);
      resolve(args[0]);
    };
    supervisor.on(name, listener as never);
  });
}

function resultOf(outcome: AgentOutcome): Record<string, unknown> {
  if (outcome.status !== 'completed')
    throw new Error(`agent failed: ${outcome.reason}: ${outcome.error.message}`);
  return outcome.result as Record<string, unknown>;
}

async function orchestrator(cwd: string): Promise<AgentDefinition> {
  const { getAgent } = await import('../../src/definition/discovery.ts');
  const worker = await getAgent('worker', { cwd });
  return {
    ...worker,
    name: 'orchestrator',
    tools: ['spawn_agent', 'send_instruction', 'await_agents', 'complete_task'],
  };
}

for (const harness of harnesses) {
  describe(`engine contract: ${harness.name}${harness.skip ? ` (skipped: ${harness.skip})` : ''}`, {
    skip: harness.skip !== undefined,
  }, () => {
    let open: Supervisor[] = [];
    const start = (...args: Parameters<typeof harness.supervisor>) => {
      const made = harness.supervisor(...args);
      open.push(made.supervisor);
      return made;
    };

    beforeAll(() => harness.setup());
    beforeEach(() => harness.ready());
    afterEach(async () => {
      await Promise.all(open.map((supervisor) => supervisor.close()));
      open = [];
    });
    afterAll(() => harness.teardown());

    it('spawn: the agent runs to Completed with its result, and says so on the supervisor and its handle', async () => {
      const { supervisor, cwd } = start();
      writeFileSync(path.join(cwd, 'a.md'), '# A\n');
      expect(supervisor.backend).toBe(harness.name);
      const handle = supervisor.spawn('worker', { task: 'Review a.md.' });
      const started = new Promise((resolve) => handle.once('started', resolve));
      const ended = new Promise((resolve) => handle.once('ended', resolve));
      const completed = nextEvent(supervisor, 'agent:completed', (e) => e.agentId === handle.id);
      const outcome = await handle.result;
      expect(resultOf(outcome).files).toEqual(['a.md']);
      await expect(started).resolves.toMatchObject({ agentId: handle.id, resumed: false });
      await expect(ended).resolves.toMatchObject({ outcome: { status: 'completed' } });
      await expect(completed).resolves.toMatchObject({ agent: 'worker', outcome });
      const journal = await supervisor.journal(handle.id);
      expect(journal[0]?.type).toBe('Started');
      expect(journal.at(-1)?.type).toBe('Completed');
    });

    it('fan-out: every agent completes; results stream as they finish and come back in input order', async () => {
      const { supervisor } = start();
      const specs = Array.from({ length: 8 }, (_, i) => ({ agent: 'worker', task: `Item ${i}: report.` }));
      const run = supervisor.fanOut(specs, { concurrency: 4 });
      const streamed: number[] = [];
      for await (const result of run) streamed.push(result.index);
      const results = await run.all();
      expect(streamed.sort((a, b) => a - b)).toEqual(specs.map((_, i) => i));
      for (const [i, result] of results.entries()) {
        expect(result.index).toBe(i);
        expect(String(resultOf(result.outcome).summary)).toContain(`Item ${i}`);
      }
    });

    it('instructions sent before the agent waits are kept and delivered in order', async () => {
      const { supervisor } = start();
      const handle = supervisor.spawn('worker', { task: 'Wait for 2 instructions, then report.' });
      handle.send('first');
      const second = supervisor.instruct(handle.id, 'second');
      const outcome = await handle.result;
      await expect(second).resolves.toBe(1);
      expect(resultOf(outcome).instructions).toEqual(['Instruction: first', 'Instruction: second']);
    });

    it('an instruction sent while the agent waits wakes it', async () => {
      const { supervisor } = start();
      const handle = supervisor.spawn('worker', { task: 'Wait for 1 instruction, then report.' });
      await nextEvent(supervisor, 'agent:waiting', (e) => e.agentId === handle.id);
      await expect(supervisor.instruct(handle.id, 'now')).resolves.toBe(0);
      expect(resultOf(await handle.result).instructions).toEqual(['Instruction: now']);
    });

    it('cancel: a waiting agent ends Failed(cancelled), journalled, and takes no more instructions', async () => {
      const { supervisor } = start();
      const handle = supervisor.spawn('worker', { task: 'Wait for 1 instruction, then report.' });
      await nextEvent(supervisor, 'agent:waiting', (e) => e.agentId === handle.id);
      handle.cancel('the test is done with it');
      const outcome = await handle.result;
      expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
      expect(outcome.status === 'failed' ? outcome.error.message : '').toContain('the test is done with it');
      const journal = await supervisor.journal(handle.id);
      expect(journal.at(-1)).toMatchObject({ type: 'Failed', reason: 'cancelled' });
      expect(() => handle.send('too late')).toThrow(expect.objectContaining({ code: 'agent_not_running' }));
    });

    it('crash: an agent whose runner dies resumes from its journal; no finished tool call runs again', async () => {
      const { supervisor, cwd } = start();
      const handle = supervisor.spawn('worker', { task: 'Use note first, then call crash_runner.' });
      const restarted = nextEvent(supervisor, 'agent:restarted', (e) => e.agentId === handle.id);
      const outcome = await handle.result;
      expect(resultOf(outcome)).toEqual({ called: 'crash_runner' });
      await expect(restarted).resolves.toMatchObject({ restart: 1 });
      // `note` finished before the crash and `crash_runner` was cut off by it: neither ran again.
      expect(executions(cwd, handle.id)).toEqual(['note', 'crash_runner']);
      const journal = await supervisor.journal(handle.id);
      expect(journal.filter((event) => event.type === 'Resumed')).toHaveLength(1);
    });

    it('nested orchestration: an agent spawns, instructs and awaits subagents through the supervisor', async () => {
      const { supervisor, cwd } = start({
        providers: {
          policy: {
            kind: 'module',
            module: policyProvider,
            options: { workers: 2, instructionsPerWorker: 1 },
          },
          simulated: { kind: 'simulated' },
        },
      });
      const spawned: string[] = [];
      const handle = supervisor.spawn(await orchestrator(cwd), { task: 'Coordinate.' });
      supervisor.on('agent:spawned', (e) => {
        if (e.parentId === handle.id) spawned.push(e.agentId);
      });
      const outcome = await handle.result;
      const workers = resultOf(outcome).workers as { agentId: string; status: string; result: unknown }[];
      expect(workers.map((w) => w.agentId).sort()).toEqual([...spawned].sort());
      for (const worker of workers) {
        expect(worker).toMatchObject({
          status: 'completed',
          result: { instructions: [`Instruction: instruction 1 for ${worker.agentId}`] },
        });
      }
      expect(supervisor.treeUsage(handle.id)?.usage.inputTokens).toBeGreaterThan(outcome.usage.inputTokens);
    });

    it('host tools run on the supervisor for the agent that calls them', async () => {
      const calls: string[] = [];
      const { supervisor } = start({
        hostTools: {
          lookup: {
            description: 'Looks something up on the supervisor.',
            parameters: { type: 'object', properties: {}, additionalProperties: true },
            readOnly: true,
            execute: (_args, ctx) => {
              calls.push(ctx.agentId);
              return `looked up for ${ctx.agentId}`;
            },
          },
        },
      });
      const handle = supervisor.spawn('worker', { task: 'call lookup' });
      expect(resultOf(await handle.result)).toEqual({ called: 'lookup' });
      expect(calls).toEqual([handle.id]);
      const journal = await supervisor.journal(handle.id);
      const result = journal.find((event) => event.type === 'ToolResult' && event.name === 'lookup');
      expect(result).toMatchObject({ ok: true, text: `looked up for ${handle.id}` });
    });

    it('retry: an agent continues a failed one from its journal; the calls it finished do not run again', async () => {
      const markers = mkdtempSync(path.join(tmpdir(), 'troupe-markers-'));
      const { supervisor, cwd } = start({
        providers: { flaky: { kind: 'module', module: flakyProvider, options: { markers } } },
        defaultProvider: 'flaky',
      });
      try {
        const first = supervisor.spawn('worker', { task: 'Do flaky 0.' });
        expect(await first.result).toMatchObject({ status: 'failed', reason: 'provider_error' });
        const retry = supervisor.spawn('worker', { task: 'Do flaky 0.', retryOf: first.id });
        expect(resultOf(await retry.result)).toEqual({ task: 'flaky 0' });
        expect(executions(cwd, first.id)).toEqual(['note']);
        expect(executions(cwd, retry.id)).toEqual([]);
        const journal = await supervisor.journal(retry.id);
        expect(journal[0]).toMatchObject({ type: 'Started', agentId: retry.id });
        // Resumed once from the copied journal; on redis a worker that misses its lock renewal (a
        // loaded machine) has the job taken over, which resumes it once more: the calls the first
        // agent finished still ran once (above), and the run ends completed.
        const resumed = journal.filter((event) => event.type === 'Resumed');
        if (harness.name === 'threads') expect(resumed).toHaveLength(1);
        else expect(resumed.length).toBeGreaterThanOrEqual(1);
        expect(journal.at(-1)?.type).toBe('Completed');
        expect((await supervisor.journal(first.id)).at(-1)).toMatchObject({ type: 'Failed' });
      } finally {
        rmSync(markers, { recursive: true, force: true });
      }
    });

    it("the run's MCP servers and model aliases reach the agent; its warnings and every request's usage come back", async () => {
      const scratch = mkdtempSync(path.join(tmpdir(), 'troupe-contract-mcp-'));
      const pidFile = path.join(scratch, 'pids');
      const loaded = parseDefinition(
        '---\nname: mcp-user\ndescription: Uses MCP tools.\nmodel: sonnet\ntools: [mcp__everything__echo, no_such_tool]\n---\nUse the tools.\n',
        '/agents/mcp-user.md',
      );
      if (!loaded.definition) throw new Error(JSON.stringify(loaded.errors));
      const steps = [
        { toolCalls: [{ name: 'mcp__everything__echo', arguments: { message: `on ${harness.name}` } }] },
        { text: 'done' },
      ];
      const { supervisor } = start({
        providers: { scripted: { kind: 'module', module: scriptedProvider, options: { steps } } },
        defaultProvider: 'scripted',
        definitions: [loaded.definition],
        modelMap: { sonnet: 'contract-sonnet' },
        mcpServers: { everything: stdioEverything(pidFile) },
        mcpProjectFile: false,
        // MCP tools ask in the default mode (docs/permissions.md); nobody is here to answer.
        permissions: { allow: ['mcp__everything__echo'] },
      });
      try {
        const warnings: AgentWarnings[] = [];
        const usage: AgentUsage[] = [];
        supervisor.on('agent:warnings', (event) => warnings.push(event));
        supervisor.on('agent:usage', (event) => usage.push(event));
        const handle = supervisor.spawn('mcp-user', { task: 'Echo something.' });
        const handleWarnings = new Promise((resolve) => handle.once('warnings', resolve));
        expect(await handle.result).toMatchObject({ status: 'completed', answer: 'done' });
        const journal = await supervisor.journal(handle.id);
        expect(journal[0]).toMatchObject({ type: 'Started', model: 'contract-sonnet' });
        const echo = journal.find((event) => event.type === 'ToolResult');
        expect(echo).toMatchObject({
          name: 'mcp__everything__echo',
          ok: true,
          text: `Echo: on ${harness.name}`,
        });
        // On redis a worker that misses its lock renewal (a loaded machine) has its job taken over,
        // and a takeover before the Started event was acknowledged runs the agent from its start
        // again: signals are at least once there, so each is checked for what it says.
        expect(warnings.length).toBeGreaterThan(0);
        for (const event of warnings) {
          expect(event).toEqual(
            expect.objectContaining({
              agentId: handle.id,
              warnings: [
                expect.objectContaining({ code: 'unknown_tool', file: '/agents/mcp-user.md', line: 5 }),
              ],
            }),
          );
        }
        await expect(handleWarnings).resolves.toEqual(warnings[0]);
        // Usage comes per model request (step).
        expect(new Set(usage.map((event) => event.agentId))).toEqual(new Set([handle.id]));
        expect([...new Set(usage.map((event) => event.step))].sort()).toEqual([1, 2]);
      } finally {
        await supervisor.close();
        // A redis worker keeps its MCP servers until it exits; this test's server goes now.
        for (const pid of pids(pidFile)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // Already gone (the threads engine closed it with its thread).
          }
        }
        rmSync(scratch, { recursive: true, force: true });
      }
    });

    it('close: running agents end Failed(cancelled), later spawns fail, and close is idempotent', async () => {
      const { supervisor } = start();
      const handle = supervisor.spawn('worker', { task: 'Wait for 1 instruction, then report.' });
      await nextEvent(supervisor, 'agent:waiting', (e) => e.agentId === handle.id);
      await supervisor.close();
      expect(await handle.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
      const late = await supervisor.spawn('worker', { task: 'Too late.' }).result;
      expect(late).toMatchObject({
        status: 'failed',
        reason: 'invalid_request',
        error: { code: 'supervisor_closed' },
      });
      await expect(supervisor.close()).resolves.toBeUndefined();
    });
  });
}
