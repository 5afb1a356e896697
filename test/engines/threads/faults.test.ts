import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ThreadCrashed } from '../../../src/supervisor/events.ts';
import type { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { fixtures, policySupervisor, tempDir } from '../../supervisor/helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

const cases = [
  { tool: 'crash_throw', cause: 'thread_crashed' },
  { tool: 'crash_exit', cause: 'thread_crashed' },
  { tool: 'crash_oom', cause: 'thread_out_of_memory' },
  { tool: 'crash_spin', cause: 'heartbeat_timeout' },
] as const;

// Only a spinning thread needs the heartbeat to be found, and only its case shortens it. The others
// keep policySupervisor's default (20 s): on a loaded machine a healthy thread busy starting, or a
// thread thrashing towards its heap limit, missed a 6 s heartbeat and counted as a second crash or
// as the wrong cause (load 10-12: three crashes, and heartbeat_timeout for OOM).
const SPIN_HEARTBEAT = { intervalMs: 250, timeoutMs: 8000 };

describe('a thread that dies takes only its actors, which resume from their journals', () => {
  for (const { tool, cause } of cases) {
    it(`${tool}: the agent resumes and completes, no finished call runs twice, other agents complete`, async () => {
      const cwd = tempDir();
      supervisor = policySupervisor({
        cwd,
        defaultProvider: 'policy',
        ...(tool === 'crash_spin' ? { heartbeat: SPIN_HEARTBEAT } : {}),
        toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
        ...(tool === 'crash_oom'
          ? { resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 8 } }
          : {}),
      });
      const crashes: ThreadCrashed[] = [];
      const restarted: string[] = [];
      supervisor.on('thread:crashed', (e) => crashes.push(e));
      supervisor.on('agent:restarted', (e) => restarted.push(e.agentId));
      const faulty = supervisor.spawn('worker', { task: `Use note first, then call ${tool}.` });
      const others = Array.from({ length: 4 }, (_, i) =>
        supervisor?.spawn('worker', { task: `Plain task ${i}.` }),
      );
      const outcome = await faulty.result;
      expect(outcome).toMatchObject({ status: 'completed', result: { called: tool } });
      for (const other of others) expect((await other?.result)?.status).toBe('completed');

      expect(crashes).toHaveLength(1);
      expect(crashes[0]?.cause.code).toBe(cause);
      expect(crashes[0]?.agents).toContain(faulty.id);
      expect(restarted).toContain(faulty.id);
      const log = readFileSync(path.join(cwd, '.faults', 'executions.log'), 'utf8')
        .trim()
        .split('\n');
      const mine = log.filter((line) => line.startsWith(faulty.id));
      // `note` finished before the crash: it is never run again. The faulting call ran once
      // (it was interrupted, or finished just before the thread died).
      expect(mine).toEqual([`${faulty.id} note`, `${faulty.id} ${tool}`]);
    });
  }

  it('after the restart cap the agent fails with reason crashed and the cause', async () => {
    supervisor = policySupervisor({
      cwd: tempDir(),
      defaultProvider: 'policy',
      restart: { maxRetries: 0 },
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
    });
    const outcome = await supervisor.spawn('worker', { task: 'call crash_exit' }).result;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'crashed', error: { code: 'thread_crashed' } });
  });
});
