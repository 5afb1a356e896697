/**
 * A tool module whose call never settles, run in a worker thread against a loopback model that
 * keeps calling it: each call fails at the tool's time limit and the model is told so, the agent
 * ends at its step limit like any other, and an agent beside it is not held up.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { startToolLoopServer, type ToolLoopServer } from '../fixtures/loopback/tool-loop-server.ts';
import { tempDir } from './helpers.ts';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'supervisor');

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

describe('a tool module that never answers', () => {
  it('fails each call at its time limit; the agent and the one beside it end at their step limit', async () => {
    const hanging = await startToolLoopServer({ tool: 'hang', args: {} });
    const reading = await startToolLoopServer({ tool: 'read_file', args: { path: 'a.txt' } });
    servers.push(hanging, reading);
    const cwd = tempDir();
    writeFileSync(path.join(cwd, 'a.txt'), 'alpha\n');
    const options = (server: ToolLoopServer) => ({
      kind: 'openai' as const,
      options: { baseURL: server.baseURL, apiKey: 'k', maxRetries: 0 },
    });
    supervisor = new Supervisor({
      threads: 1,
      cwd,
      providers: { hanging: options(hanging), reading: options(reading) },
      toolModules: [{ module: path.join(fixtures, 'hanging-tool.ts'), export: 'hangingTool' }],
    });
    const stuck = supervisor.spawn('worker', {
      task: 'Call hang',
      provider: 'hanging',
      model: 'gpt-4.1-mini',
      limits: { maxSteps: 3 },
    });
    const beside = supervisor.spawn('worker', {
      task: 'Read a.txt',
      provider: 'reading',
      model: 'gpt-4.1-mini',
      limits: { maxSteps: 3 },
    });
    const [outcome, other] = await Promise.all([stuck.result, beside.result]);
    expect(outcome).toMatchObject({ status: 'failed', reason: 'step_limit', steps: 3 });
    expect(other).toMatchObject({ status: 'failed', reason: 'step_limit', steps: 3 });
    expect(hanging.requests()).toBe(3);
    expect(toolResults(hanging).at(-1)).toContain('hang did not finish within 50 ms (its time limit)');
    expect(toolResults(reading).at(-1)).toContain('alpha');
  });
});
