import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { INTERRUPTED_TOOL_RESULT } from '../../src/journal/constants.ts';
import { readJournal } from '../../src/journal/reader.ts';
import type { KnownRecord } from '../../src/supervisor/agent-record.ts';
import { type HostToolContext, runHostTool } from '../../src/supervisor/host-tools.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { fixtures, policySupervisor, tempDir } from './helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

function deferred<T>() {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('a host tool call cut off by the death of its agent’s thread', () => {
  it('runs once, and the restarted agent gets its outcome rather than "interrupted"', async () => {
    const dir = tempDir();
    const journals = path.join(dir, 'journals');
    const started = deferred<void>();
    const release = deferred<string>();
    let executions = 0;
    supervisor = policySupervisor({
      cwd: dir,
      journalDir: journals,
      threads: 1,
      toolModules: [{ module: path.join(fixtures, 'fault-tools.ts'), export: 'faultTools' }],
      hostTools: {
        gate: {
          description: 'Waits until the test opens it.',
          parameters: { type: 'object', properties: {} },
          execute: () => {
            executions += 1;
            started.resolve();
            return release.promise;
          },
        },
      },
    });
    const sup = supervisor;
    const a = sup.spawn('worker', { task: 'call gate' });
    const restarted = new Promise<void>((resolve) => {
      sup.on('agent:restarted', (event) => {
        if (event.agentId === a.id) resolve();
      });
    });
    await started.promise;
    // B ends the thread A shares with it while A's gate runs on the supervisor.
    const b = sup.spawn('worker', { task: 'call crash_exit' });
    await restarted;
    release.resolve('gate opened');

    expect(await a.result).toMatchObject({ status: 'completed' });
    expect(await b.result).toMatchObject({ status: 'completed' });
    expect(executions).toBe(1);
    const results = readJournal(path.join(journals, `${a.id}.jsonl`)).events.filter(
      (event) => event.type === 'ToolResult' && event.name === 'gate',
    );
    // Without the fix the resumed agent recorded the call as interrupted while the tool ran on.
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ ok: true });
    expect(JSON.stringify(results[0])).toContain('gate opened');
  });
});

describe('runHostTool', () => {
  function context(execute: () => Promise<string>) {
    const caller = {
      handle: { id: 'agent-1', result: new Promise(() => {}) },
      state: 'running',
      // No definition yet: the host tool's own time limit applies.
      spec: { definition: undefined },
    } as unknown as KnownRecord;
    const ctx: HostToolContext = {
      hostTools: { gate: { description: 'gate', parameters: { type: 'object' }, execute } },
      agents: new Map([['agent-1', caller]]),
      maxDepth: 1,
      maxChildren: 1,
      maxSubagents: 0,
      spawn: () => {
        throw new Error('not used');
      },
      instruct: () => Promise.reject(new Error('not used')),
    };
    return ctx;
  }

  it('answers a resume with the kept outcome of the call, without running it again', async () => {
    let runs = 0;
    const ctx = context(async () => {
      runs += 1;
      return `run ${runs}`;
    });
    const first = await runHostTool(ctx, 'agent-1', 'gate', {}, { callId: 'c1' });
    const resumed = await runHostTool(ctx, 'agent-1', 'gate', {}, { callId: 'c1', resume: true });
    expect([first.text, resumed.text, runs]).toEqual(['run 1', 'run 1', 1]);
  });

  it('runs a call whose id an earlier call had (servers that send none get call_0 every turn)', async () => {
    let runs = 0;
    const ctx = context(async () => {
      runs += 1;
      return `run ${runs}`;
    });
    const first = await runHostTool(ctx, 'agent-1', 'gate', {}, { callId: 'call_0' });
    const next = await runHostTool(ctx, 'agent-1', 'gate', {}, { callId: 'call_0' });
    const resumed = await runHostTool(ctx, 'agent-1', 'gate', {}, { callId: 'call_0', resume: true });
    expect([first.text, next.text, resumed.text, runs]).toEqual(['run 1', 'run 2', 'run 2', 2]);
  });

  it('answers a resume of a call it never ran "interrupted", without running it', async () => {
    let runs = 0;
    const ctx = context(async () => {
      runs += 1;
      return 'ran';
    });
    const outcome = await runHostTool(ctx, 'agent-1', 'gate', {}, { callId: 'unknown', resume: true });
    expect(outcome).toEqual({ ok: false, text: INTERRUPTED_TOOL_RESULT });
    expect(runs).toBe(0);
  });
});
