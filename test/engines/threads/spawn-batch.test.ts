import { afterEach, describe, expect, it, vi } from 'vitest';
import { HostPool } from '../../../src/engines/threads/host-pool.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { policySupervisor, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
  vi.restoreAllMocks();
});

describe('spawns sent to threads in batches', () => {
  it('agents spawned together reach each thread in one message, placed least-loaded', async () => {
    const spawnMany = vi.spyOn(HostPool.prototype, 'spawnMany');
    supervisor = policySupervisor({ cwd: tempDir() });
    const started: number[] = [];
    supervisor.on('agent:started', (event) => started.push(event.hostId));
    const handles = Array.from({ length: 10 }, (_, i) =>
      supervisor?.spawn('worker', { task: `Report ${i}.` }),
    );
    const outcomes = await Promise.all(handles.map((handle) => handle?.result));
    expect(outcomes.map((outcome) => outcome?.status)).toEqual(Array(10).fill('completed'));
    expect(spawnMany).toHaveBeenCalledTimes(2);
    expect(spawnMany.mock.calls.map(([, specs]) => specs.length)).toEqual([5, 5]);
    const hosts = spawnMany.mock.calls.map(([host]) => host.id);
    expect(new Set(hosts).size).toBe(2);
    expect(started.filter((id) => id === hosts[0])).toHaveLength(5);
  });

  it('a large fan-out reaches the threads every 128 launches, not only after the last', async () => {
    const spawnMany = vi.spyOn(HostPool.prototype, 'spawnMany');
    supervisor = policySupervisor({ cwd: tempDir() });
    const handles = Array.from({ length: 300 }, (_, i) =>
      supervisor?.spawn('worker', { task: `Report ${i}.` }),
    );
    const outcomes = await Promise.all(handles.map((handle) => handle?.result));
    expect(outcomes.every((outcome) => outcome?.status === 'completed')).toBe(true);
    // Two passes of 128 (64 per thread) while the launches run, then the last 44.
    expect(spawnMany.mock.calls.map(([, specs]) => specs.length)).toEqual([64, 64, 64, 64, 22, 22]);
  });

  it('an agent cancelled as it starts is stopped by its thread, not by terminating the thread', async () => {
    supervisor = policySupervisor({ cwd: tempDir() });
    const crashes: number[] = [];
    supervisor.on('thread:crashed', (event) => crashes.push(event.hostId));
    const handle = supervisor.spawn('worker', { task: 'Wait for 2 instructions, then report.' });
    supervisor.on('agent:started', (event) => {
      if (event.agentId === handle.id) handle.cancel('changed my mind');
    });
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled' });
    expect(crashes).toEqual([]);
  });
});
