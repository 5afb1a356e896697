/**
 * `spawn_agent` and `send_instruction` are never retried: when a call's answer is lost on its way
 * back (a Redis connection dropped after the supervisor started the child), a retry would start a
 * second child or send the instruction twice. A definition file asking for it is refused; a
 * definition built in code that asks for it is not retried.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { loadDefinitionFile } from '../../src/definition/load.ts';
import type { Tool } from '../../src/tools/types.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();
const policy = { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 1 };

/** A host tool proxy whose answer is lost: the supervisor did the work, the thread saw a throw. */
function lostAnswer(name: string) {
  const execute = vi.fn(() => {
    throw new Error('Connection is closed.');
  });
  const tool: Tool = {
    name,
    description: `${name} on the supervisor.`,
    parameters: { type: 'object', properties: {} },
    readOnly: false,
    timeoutMs: 0,
    execute,
  };
  return { tool, execute };
}

describe('orchestration tools and toolConfig retry', () => {
  it('refuses a retry for spawn_agent and send_instruction in a definition file, at its line', async () => {
    const dir = await tempDir();
    const file = join(dir, 'orchestrator.md');
    writeFileSync(
      file,
      [
        '---',
        'name: orchestrator',
        'description: Spawns workers.',
        'toolConfig:',
        '  spawn_agent: { retry: { maxRetries: 2 } }',
        '  send_instruction: { retry: { maxRetries: 1 } }',
        '  await_agents: { retry: { maxRetries: 1 }, timeoutMs: 5000 }',
        '---',
        'Spawn.',
        '',
      ].join('\n'),
    );
    const result = await loadDefinitionFile(file);
    expect(result.definition).toBeUndefined();
    expect(result.errors).toMatchObject([
      { code: 'invalid_field', path: '/toolConfig/spawn_agent/retry', line: 5, file },
      { code: 'invalid_field', path: '/toolConfig/send_instruction/retry', line: 6, file },
    ]);
    expect(result.errors[0]?.message).toBe(
      'Expected `toolConfig.spawn_agent.retry` to be absent: a retry of `spawn_agent` whose answer was lost could start a second subagent (the supervisor may have done the first); its time limit is `timeoutMs`, got an object',
    );
    expect(result.errors[1]?.message).toContain('could send its instruction twice');
  });

  it('calls spawn_agent and send_instruction once whatever retry a definition built in code asks for', async () => {
    const dir = await tempDir();
    for (const name of ['spawn_agent', 'send_instruction']) {
      const { tool, execute } = lostAnswer(name);
      const toolbox = toolboxFor(dir, { tools: [name], toolConfig: { [name]: { retry: policy } } }, [tool], {
        sleep: async () => {},
      });
      const result = await toolbox.call(name, {});
      expect(result).toMatchObject({ ok: false, attempts: 1 });
      expect(execute).toHaveBeenCalledTimes(1);
    }
  });
});
