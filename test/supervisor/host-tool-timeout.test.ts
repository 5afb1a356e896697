/**
 * A host tool (`hostTools`, run on the supervisor) whose call never settles fails at its time limit
 * (`timeoutMs`, default DEFAULT_TOOL_TIMEOUT_MS) with the answer a thread tool's limit gives, and
 * its signal aborts; before, it held its agent until a cancel or a wall clock. A definition's
 * `toolConfig.<tool>.timeoutMs` governs the call on the supervisor, over the tool's own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { getAgent } from '../../src/definition/discovery.ts';
import { hasErrorCode } from '../../src/errors.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import type { ToolOutcome } from '../../src/tools/types.ts';
import { startToolLoopServer, type ToolLoopServer } from '../fixtures/loopback/tool-loop-server.ts';
import { tempDir } from './helpers.ts';

const servers: ToolLoopServer[] = [];
let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** The text of every `tool` message the server received, in order. */
function toolResults(server: ToolLoopServer): string[] {
  return server.bodies.flatMap((body) =>
    (body.messages as { role: string; content: unknown }[])
      .filter((message) => message.role === 'tool')
      .map((message) => String(message.content)),
  );
}

describe('a host tool that never answers', () => {
  it('fails each call at its timeoutMs, aborting its signal; the agent ends at its step limit', async () => {
    const server = await startToolLoopServer({ tool: 'hang', args: {} });
    servers.push(server);
    const reasons: unknown[] = [];
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      journalDir: tempDir(),
      providers: {
        loop: { kind: 'openai', options: { baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 } },
      },
      hostTools: {
        hang: {
          description: 'Never answers.',
          parameters: { type: 'object', properties: {} },
          timeoutMs: 50,
          execute: (_args, { signal }) =>
            new Promise<ToolOutcome>(() => {
              signal.addEventListener('abort', () => reasons.push(signal.reason));
            }),
        },
      },
    });
    const handle = supervisor.spawn('worker', {
      task: 'Call hang',
      provider: 'loop',
      model: 'gpt-4.1-mini',
      limits: { maxSteps: 2 },
    });
    expect(await handle.result).toMatchObject({ status: 'failed', reason: 'step_limit', steps: 2 });
    expect(server.requests()).toBe(2);
    expect(toolResults(server).at(-1)).toContain(
      'hang did not finish within 50 ms (its time limit) and was abandoned. Do not call it again with the same arguments.',
    );
    expect(reasons[0]).toMatchObject({ name: 'TimeoutError' });
  });

  it("fails at its definition's toolConfig.<tool>.timeoutMs on the supervisor too, aborting its signal", async () => {
    const server = await startToolLoopServer({ tool: 'hang', args: {} });
    servers.push(server);
    const reasons: unknown[] = [];
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      journalDir: tempDir(),
      providers: {
        loop: { kind: 'openai', options: { baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 } },
      },
      hostTools: {
        // Its own limit is the default (10 minutes): only the definition's 50 ms can end the call.
        hang: {
          description: 'Never answers.',
          parameters: { type: 'object', properties: {} },
          execute: (_args, { signal }) =>
            new Promise<ToolOutcome>(() => {
              signal.addEventListener('abort', () => reasons.push(signal.reason));
            }),
        },
      },
    });
    const worker = await getAgent('worker', { cwd: tempDir() });
    const handle = supervisor.spawn(
      { ...worker, toolConfig: { hang: { timeoutMs: 50 } } },
      { task: 'Call hang', provider: 'loop', model: 'gpt-4.1-mini', limits: { maxSteps: 2 } },
    );
    expect(await handle.result).toMatchObject({ status: 'failed', reason: 'step_limit', steps: 2 });
    expect(toolResults(server).at(-1)).toContain('hang did not finish within 50 ms (its time limit)');
    // Before, the closure ran on untimed until its agent ended: its signal then aborted with an Error.
    expect(reasons[0]).toMatchObject({ name: 'TimeoutError', message: 'hang timed out after 50 ms' });
  });

  it("runs past its own timeoutMs when its definition's toolConfig.<tool>.timeoutMs lifts it", async () => {
    const server = await startToolLoopServer({ tool: 'slow', args: {} });
    servers.push(server);
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      journalDir: tempDir(),
      providers: {
        loop: { kind: 'openai', options: { baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 } },
      },
      hostTools: {
        slow: {
          description: 'Answers after 300 ms.',
          parameters: { type: 'object', properties: {} },
          timeoutMs: 20,
          execute: () => new Promise<string>((resolve) => setTimeout(() => resolve('slow done'), 300)),
        },
      },
    });
    const worker = await getAgent('worker', { cwd: tempDir() });
    const handle = supervisor.spawn(
      { ...worker, toolConfig: { slow: { timeoutMs: 0 } } },
      { task: 'Call slow', provider: 'loop', model: 'gpt-4.1-mini', limits: { maxSteps: 2 } },
    );
    expect(await handle.result).toMatchObject({ status: 'failed', reason: 'step_limit', steps: 2 });
    expect(toolResults(server).at(-1)).toBe('slow done');
  });

  it('refuses a timeoutMs that is not an integer from 0 to 2^31 - 1 when the Supervisor is built', () => {
    let error: unknown;
    try {
      new Supervisor({
        threads: 1,
        hostTools: {
          slow: { description: 'd', parameters: { type: 'object' }, timeoutMs: -5, execute: () => 'x' },
        },
      });
    } catch (caught) {
      error = caught;
    }
    expect(hasErrorCode(error, 'invalid_option')).toBe(true);
    expect(error).toMatchObject({
      fields: { option: 'hostTools.slow.timeoutMs' },
      message: expect.stringContaining('to be an integer from 0 (no limit) to 2147483647, got'),
    });
  });

  it("refuses a host tool named like one of troupe's own, which its agents could not be given", () => {
    for (const name of [
      'spawn_agent',
      'send_instruction',
      'await_agents',
      'complete_task',
      'wait_for_instruction',
    ]) {
      let error: unknown;
      try {
        new Supervisor({
          threads: 1,
          hostTools: { [name]: { description: 'd', parameters: { type: 'object' }, execute: () => 'x' } },
        });
      } catch (caught) {
        error = caught;
      }
      expect(hasErrorCode(error, 'invalid_option')).toBe(true);
      expect(error).toMatchObject({
        fields: { option: `hostTools.${name}` },
        message: `Expected a host tool name other than troupe's own complete_task, wait_for_instruction, spawn_agent, send_instruction, await_agents, got \`"${name}"\` (string): the agents would have two tools of that name; give yours another`,
      });
    }
  });
});
