import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isTerminal } from '../../../src/journal/events.ts';
import { readJournal } from '../../../src/journal/reader.ts';
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

  it('after the restart cap the agent fails with reason crashed and the cause, its journal ending with it', async () => {
    const journalDir = tempDir();
    supervisor = policySupervisor({
      cwd: tempDir(),
      journalDir,
      defaultProvider: 'policy',
      restart: { maxRetries: 0 },
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
    });
    const handle = supervisor.spawn('worker', { task: 'call crash_exit' });
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'crashed', error: { code: 'thread_crashed' } });
    // The engine ended it, no loop: it writes the Failed event, so a resume sees an ended agent.
    const events = readJournal(path.join(journalDir, `${handle.id}.jsonl`)).events;
    expect(events.filter(isTerminal)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({
      type: 'Failed',
      reason: 'crashed',
      error: { code: 'thread_crashed', fields: { crashes: 1, tools: ['crash_exit'] } },
    });
    expect(outcome).toMatchObject({ rounds: 1 });
    expect(events.at(-1)).toMatchObject({ rounds: 1 });
  });

  it('an agent cancelled while it waits to restart ends cancelled in its journal', async () => {
    const journalDir = tempDir();
    supervisor = policySupervisor({
      cwd: tempDir(),
      journalDir,
      defaultProvider: 'policy',
      // It waits its backoff (far longer than the test) queued, on no thread.
      restart: { maxRetries: 3, baseDelayMs: 600_000, maxDelayMs: 600_000 },
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
    });
    const handle = supervisor.spawn('worker', { task: 'call crash_exit' });
    await new Promise<void>((resolve) => handle.once('restarted', () => resolve()));
    handle.cancel('not needed');
    const outcome = await handle.result;
    expect(outcome).toMatchObject({ status: 'failed', reason: 'cancelled', error: { code: 'cancelled' } });
    const events = readJournal(path.join(journalDir, `${handle.id}.jsonl`)).events;
    expect(events.filter(isTerminal)).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({
      type: 'Failed',
      reason: 'cancelled',
      error: { code: 'cancelled' },
    });
  });

  it.runIf(existsSync('/proc/self/stat'))(
    'kills the process group of a command running on a thread the heartbeat killed',
    async () => {
      const cwd = tempDir();
      supervisor = policySupervisor({
        cwd,
        threads: 1,
        defaultProvider: 'policy',
        heartbeat: SPIN_HEARTBEAT,
        restart: { maxRetries: 0 },
        permissions: { allow: ['run_terminal_cmd'] },
        toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      });
      // $$ is bash's pid, which leads the command's process group.
      const command =
        'mkdir -p .faults && echo $$ > .faults/pgid.tmp && mv .faults/pgid.tmp .faults/command.pgid; sleep 600; echo slept';
      const runner = supervisor.spawn('worker', { task: `Please run the command \`${command}\`.` });
      const spinner = supervisor.spawn('worker', { task: 'call spin_during_command' });
      for (const handle of [runner, spinner]) {
        expect(await handle.result).toMatchObject({ status: 'failed', reason: 'crashed' });
      }
      const pgid = Number(readFileSync(path.join(cwd, '.faults', 'command.pgid'), 'utf8'));
      expect(pgid).toBeGreaterThan(0);
      // SIGKILL is delivered at once but the processes need the CPU to die: wait for it (bounded).
      // Without the engine's kill, `sleep 600` lives on past the supervisor and the test process.
      await vi.waitFor(() => expect(liveMembers(pgid)).toEqual([]), { timeout: 15_000, interval: 50 });
    },
  );
});

/**
 * The processes of a process group that are not zombies. `process.kill(-pgid, 0)` cannot tell: the
 * group's leader stays a zombie, since only the dead thread could have reaped it.
 */
function liveMembers(pgid: number): string[] {
  const live: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // Gone meanwhile.
    }
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') live.push(stat.slice(0, stat.lastIndexOf(')') + 1));
  }
  return live;
}
