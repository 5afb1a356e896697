import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentHandle } from '../../src/supervisor/agent-handle.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { policySupervisor, tempDir } from './helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
  vi.restoreAllMocks();
});

/** The handle events emitted for one agent run to its end. */
async function eventsOfOneAgent(s: Supervisor, task: string): Promise<string[]> {
  const emit = vi.spyOn(AgentHandle.prototype, 'emit');
  emit.mockClear();
  const handle = s.spawn('worker', { task });
  const outcome = await handle.result;
  expect(outcome.status).toBe('completed');
  const names = emit.mock.calls
    .filter((_, i) => emit.mock.contexts[i] === handle)
    .map(([name]) => String(name));
  emit.mockRestore();
  return names;
}

describe('per-request signals only for listeners', () => {
  it('an agent nobody listens to sends no round or usage events; a listener turns on only its own', async () => {
    supervisor = policySupervisor({ threads: 1, cwd: tempDir() });
    const quiet = await eventsOfOneAgent(supervisor, 'Report 1.');
    expect(quiet).toContain('started');
    expect(quiet).toContain('ended');
    expect(quiet).not.toContain('round');
    expect(quiet).not.toContain('usage');
    expect(quiet).not.toContain('tool');

    const usage: string[] = [];
    supervisor.on('agent:usage', (event) => usage.push(event.agentId));
    const listened = await eventsOfOneAgent(supervisor, 'Report 2.');
    expect(listened).toContain('usage');
    expect(listened).not.toContain('round');
    expect(usage.length).toBeGreaterThan(0);
  });

  it('a listener on a handle turns its events on before the agent starts', async () => {
    supervisor = policySupervisor({ threads: 1, cwd: tempDir() });
    const handle = supervisor.spawn('worker', { task: 'Report 3.' });
    const rounds: number[] = [];
    handle.on('round', (event) => rounds.push(event.round));
    expect((await handle.result).status).toBe('completed');
    expect(rounds[0]).toBe(1);
  });
});
