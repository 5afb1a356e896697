import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../src/cli/main.ts';
import { Supervisor } from '../../../src/supervisor/supervisor.ts';
import { spawnChild } from '../../fixtures/children.ts';
import { captureIO } from '../../run-dir/helpers.ts';
import {
  killWorkers,
  redisServerPath,
  repoRoot,
  skipReason,
  startWorker,
  TestRedis,
  type TestWorker,
} from './helpers.ts';

describe(`Supervisor({ backend: 'redis' }) and \`troupe fanout --backend redis\`${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let workers: TestWorker[] = [];
  let dir: string;

  beforeAll(async () => {
    server = await TestRedis.start();
    dir = mkdtempSync(path.join(tmpdir(), 'troupe-backend-'));
    workers = [await startWorker(server.url, ['--concurrency', '8'])];
  });

  afterAll(async () => {
    await killWorkers(workers);
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the same Supervisor API runs agents on redis workers, with the same events', async () => {
    const supervisor = new Supervisor({ backend: 'redis', redisUrl: server.url, cwd: dir });
    expect(supervisor.backend).toBe('redis');
    const completed: string[] = [];
    supervisor.on('agent:completed', (event) => completed.push(event.agentId));
    // A per-request event: workers send it only because this listener exists when the agents run.
    const rounds = new Set<string>();
    supervisor.on('agent:round', (event) => rounds.add(event.agentId));
    const results = await supervisor
      .fanOut(Array.from({ length: 6 }, (_, i) => ({ agent: 'worker', task: `Item ${i}: report.` })))
      .all();
    // Its heartbeat (what workers waiting on a host call check) is there while it runs, and
    // gone with it: a closed supervisor is not taken for a live one.
    const redis = new Redis(server.url);
    try {
      expect(await redis.keys('*:supervisor:*:alive')).toHaveLength(1);
      await supervisor.close();
      expect(await redis.keys('*:supervisor:*:alive')).toEqual([]);
    } finally {
      await redis.quit();
    }
    expect(results.map((r) => r.outcome.status)).toEqual(Array(6).fill('completed'));
    expect(completed.sort()).toEqual(results.map((r) => r.agentId).sort());
    expect([...rounds].sort()).toEqual(results.map((r) => r.agentId).sort());
  });

  it('troupe fanout --backend redis writes every result to the run directory', async () => {
    const plan = path.join(dir, 'plan.yaml');
    writeFileSync(plan, 'agent: worker\nruns:\n  - task: First.\n  - task: Second.\n  - task: Third.\n');
    const out = path.join(dir, 'run');
    const child = spawnChild(
      process.execPath,
      [
        path.join(repoRoot, 'bin/troupe.mjs'),
        'fanout',
        plan,
        '--backend',
        'redis',
        '--redis',
        server.url,
        '--out',
        out,
      ],
      {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', OPENAI_BASE_URL: '' },
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(stderr).not.toMatch(/internal error/);
    expect(code).toBe(0);
    const lines = readFileSync(path.join(out, 'results.jsonl'), 'utf8').trim().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { status: string }).status)).toEqual(
      Array(3).fill('completed'),
    );
  });

  it('troupe fanout --queue and --prefix reach workers started with them, and plan.json keeps them for resume', async () => {
    const own = await startWorker(server.url, ['--queue', 'q-fanout', '--prefix', 'p-fanout']);
    workers.push(own);
    const plan = path.join(dir, 'queue-plan.yaml');
    writeFileSync(plan, 'agent: worker\nruns:\n  - task: First.\n  - task: Second.\n');
    const out = path.join(dir, 'queue-run');
    const flags = [
      '--backend',
      'redis',
      '--redis',
      server.url,
      '--queue',
      'q-fanout',
      '--prefix',
      'p-fanout',
    ];
    const io = captureIO();
    // Without the flags the jobs went to troupe-agents, which no worker of this queue takes.
    expect(await main(['fanout', plan, '--json', ...flags, '--out', out], io), io.err()).toBe(0);
    const lines = readFileSync(path.join(out, 'results.jsonl'), 'utf8').trim().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { status: string }).status)).toEqual([
      'completed',
      'completed',
    ]);
    const header = io
      .out()
      .split('\n')
      .map((line) => (line === '' ? {} : (JSON.parse(line) as { type?: string; engine?: unknown })))
      .find((event) => event.type === 'run');
    expect(header?.engine).toMatchObject({ backend: 'redis', queue: 'q-fanout', prefix: 'p-fanout' });
    expect(JSON.parse(readFileSync(path.join(out, 'plan.json'), 'utf8'))).toMatchObject({
      redisQueue: 'q-fanout',
      redisPrefix: 'p-fanout',
    });
  });
});
