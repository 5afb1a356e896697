import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { spawnChild } from '../fixtures/children.ts';
import { fixtures, tempDir } from './helpers.ts';

describe('Supervisor lifecycle', () => {
  it('after close() no thread, handle or port is left: the process exits by itself', async () => {
    // --expose-gc too: a V8-wide flag the parent may run with, which threads must not be given.
    const child = spawnChild(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', path.join(fixtures, 'close-script.ts')],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as { first: string; statuses: string[] };
    expect(report.first).toBe('completed');
    expect(report.statuses.slice(1)).toEqual(Array(5).fill('failed'));
  });

  it('close() while a thread is still starting stops the thread instead of waiting for it', async () => {
    const stalled = new Promise<void>((resolve) => {
      const channel = new BroadcastChannel('troupe-test-stalled-thread');
      channel.onmessage = () => {
        channel.close();
        resolve();
      };
    });
    const supervisor = new Supervisor({
      threads: 1,
      providers: { simulated: { kind: 'simulated' } },
      execArgv: ['--import', pathToFileURL(path.join(fixtures, 'stalled-thread.mjs')).href],
    });
    const handle = supervisor.spawn('worker', { task: 'Never started.' });
    await stalled;
    // Without the fix, close() waited for the thread to finish starting: forever here.
    await supervisor.close();
    expect(await handle.result).toMatchObject({ status: 'failed', reason: 'cancelled' });
  });

  it('options are validated once, with what was expected and what was found', () => {
    expect(() => new Supervisor({ threads: 0 })).toThrow(UserError);
    expect(() => new Supervisor({ threads: 0 })).toThrow(
      'Expected `threads` to be a positive integer, got `0` (number)',
    );
    expect(() => new Supervisor({ isolation: 'process' as 'thread' })).toThrow(/isolation/);
    expect(() => new Supervisor({ providers: { a: { kind: 'simulated' } }, defaultProvider: 'b' })).toThrow(
      /defaultProvider/,
    );
    expect(() => new Supervisor({ heartbeat: { intervalMs: 1000, timeoutMs: 10 } })).toThrow(/heartbeat/);
  });

  it("a built-in provider's bad options are refused when the Supervisor is made, not by every agent", () => {
    const refused = (config: Record<string, unknown>) => {
      try {
        new Supervisor({ providers: { main: config as never } });
      } catch (error) {
        return error instanceof UserError ? { message: error.message, option: error.fields.option } : error;
      }
      return 'accepted';
    };
    expect(refused({ kind: 'openai', options: { baseURL: 42 } })).toEqual({
      message: 'Expected `providers.main.options.baseURL` to be a string, got `42` (number).',
      option: 'providers.main.options.baseURL',
    });
    expect(refused({ kind: 'simulated', options: { latency: { meanMs: 50 } } })).toMatchObject({
      option: 'providers.main.options.latency',
    });
    expect(refused({ kind: 'simulated', options: { latency: { meanMs: -1, jitterMs: 0 } } })).toMatchObject({
      option: 'providers.main.options.latency.meanMs',
    });
    expect(refused({ kind: 'anthropic', options: { timeoutMs: 0 } })).toMatchObject({
      option: 'providers.main.options.timeoutMs',
    });
    expect(refused({ kind: 'module', module: '/x.mjs', options: 'fast' })).toMatchObject({
      option: 'providers.main.options',
    });
    // No key is needed to make the Supervisor: a provider no agent uses may have none.
    expect(refused({ kind: 'anthropic', options: { apiKey: undefined, env: {} } })).toBe('accepted');
  });

  it('a spawn call of the wrong shape throws a UserError saying the shape, not a TypeError', () => {
    const supervisor = new Supervisor({ threads: 1 });
    const spawn = supervisor.spawn.bind(supervisor) as (...args: unknown[]) => unknown;
    expect(() => spawn({ agent: 'worker', task: 'x' })).toThrow(
      'Expected spawn(agent, { task, ... }), got `undefined` (undefined) as its options (a { agent, task } spec is what fanOut takes)',
    );
    expect(() => spawn('worker', { task: 42 })).toThrow(
      "Expected the spawn's `task` to be a string, got `42` (number)",
    );
    expect(() => spawn('worker', 'x')).toThrow(UserError);
    expect(supervisor.agentCount).toBe(0);
  });

  it('a spawn after close() settles Failed(invalid_request) without running', async () => {
    const supervisor = new Supervisor({ threads: 1 });
    await supervisor.close();
    const outcome = await supervisor.spawn('worker', { task: 'x' }).result;
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'supervisor_closed' },
    });
  });

  it('measureThreads() collects garbage in every thread and reports its memory', async () => {
    const supervisor = new Supervisor({ threads: 2 });
    const stats = await supervisor.measureThreads();
    await supervisor.close();
    expect(stats).toHaveLength(2);
    for (const thread of stats) expect(thread.heapUsed).toBeGreaterThan(0);
  });

  it('isolation thread runs one agent per thread at a time', async () => {
    const supervisor = new Supervisor({ threads: 2, isolation: 'thread' });
    let running = 0;
    let peak = 0;
    supervisor.on('agent:started', () => {
      running += 1;
      peak = Math.max(peak, running);
    });
    supervisor.on('agent:completed', () => {
      running -= 1;
    });
    const results = await supervisor
      .fanOut(Array.from({ length: 6 }, (_, i) => ({ agent: 'worker', task: `t${i}` })))
      .all();
    await supervisor.close();
    expect(results.every((r) => r.outcome.status === 'completed')).toBe(true);
    expect(peak).toBe(2);
  });
});

describe('spawn with resume', () => {
  it('continues an interrupted agent from its journal instead of starting it again', async () => {
    const cwd = tempDir();
    const journalDir = path.join(cwd, 'journals');
    writeFileSync(path.join(cwd, 'a.md'), '# A\n');
    writeFileSync(path.join(cwd, 'b.md'), '# B\n');
    const first = new Supervisor({ threads: 1, cwd, journalDir });
    const done = await first.spawn('worker', { id: 'agent-r', task: 'Review a.md and b.md.' }).result;
    await first.close();
    expect(done.status).toBe('completed');
    const file = path.join(journalDir, 'agent-r.jsonl');
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    // Cut the journal right after the first tool result, as if the process had died there.
    const cut = lines.findIndex((line) => JSON.parse(line).type === 'ToolResult');
    writeFileSync(file, `${lines.slice(0, cut + 1).join('\n')}\n`);

    const second = new Supervisor({ threads: 1, cwd, journalDir });
    const outcome = await second.spawn('worker', {
      id: 'agent-r',
      task: 'Review a.md and b.md.',
      resume: true,
    }).result;
    await second.close();
    expect(outcome).toMatchObject({ status: 'completed', result: { files: ['a.md', 'b.md'] } });
    const types = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).type as string);
    expect(types.filter((t) => t === 'Started')).toHaveLength(1);
    expect(types.filter((t) => t === 'Resumed')).toHaveLength(1);
    expect(types.at(-1)).toBe('Completed');
  });
});
