/**
 * `troupe fanout --backend redis --retain-seconds N`: the run's Supervisor keeps what its agents
 * leave in Redis N seconds (not until deleted), and a value that is not a non-negative integer
 * stops the command before anything runs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../src/cli/main.ts';
import { tempDir } from '../../fixtures/temp-dirs.ts';
import { captureIO } from '../../run-dir/helpers.ts';
import {
  killWorkers,
  redisServerPath,
  skipReason,
  startWorker,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

function writePlan(cwd: string): string {
  const plan = path.join(cwd, 'plan.yaml');
  writeFileSync(path.join(cwd, 'a.txt'), 'alpha\n');
  writeFileSync(
    plan,
    ['cwd: .', 'agent: worker', 'provider: simulated', 'runs:', '  - task: Review a.txt'].join('\n'),
  );
  return plan;
}

describe('troupe fanout --retain-seconds', () => {
  it('refuses a value that is not a non-negative integer, and the flag on the threads engine', async () => {
    const cwd = tempDir('troupe-cli-retain-bad-');
    const plan = writePlan(cwd);
    for (const value of ['-1', '1.5', 'ten', '']) {
      const io = captureIO();
      const out = path.join(cwd, 'run');
      expect(
        await main(['fanout', plan, '--backend', 'redis', '--retain-seconds', value, '--out', out], io),
      ).toBe(1);
      expect(io.err()).toContain('Expected a non-negative integer of seconds');
    }
    const io = captureIO();
    expect(await main(['fanout', plan, '--retain-seconds', '5', '--out', path.join(cwd, 'run')], io)).toBe(1);
    expect(io.err()).toContain('--retain-seconds only applies to the redis engine; add --backend redis');
  });
});

describe(`troupe fanout --backend redis --retain-seconds${skipReason}`, {
  skip: redisServerPath === undefined,
}, () => {
  let server: TestRedis;
  let redis: Redis;
  let workers: TestWorker[] = [];
  const queue = uniqueName('cli-retain');

  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.url);
    workers = [await startWorker(server.url, ['--queue', queue])];
  });

  afterAll(async () => {
    await killWorkers(workers);
    redis?.disconnect();
    await server?.destroy();
  });

  it("gives the agent's journal the TTL the flag says", async () => {
    const cwd = tempDir('troupe-cli-retain-');
    const plan = writePlan(cwd);
    const io = captureIO();
    const argv = ['fanout', plan, '--json', '--backend', 'redis', '--redis', server.url, '--queue', queue];
    expect(await main([...argv, '--retain-seconds', '600', '--out', path.join(cwd, 'run')], io)).toBe(0);
    const journals = await redis.keys(`troupe:${queue}:agent:*:journal`);
    expect(journals).toHaveLength(1);
    const [journal] = journals;
    const ttl = await redis.pttl(journal ?? '');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600_000);
  });

  it('records the flag in plan.json, and troupe resume without it keeps to it', async () => {
    const cwd = tempDir('troupe-cli-retain-resume-');
    const plan = writePlan(cwd);
    const out = path.join(cwd, 'run');
    const argv = ['--json', '--redis', server.url];
    const fanout = [
      'fanout',
      plan,
      ...argv,
      '--backend',
      'redis',
      '--queue',
      queue,
      '--retain-seconds',
      '600',
    ];
    expect(await main([...fanout, '--out', out], captureIO())).toBe(0);
    const recorded = JSON.parse(readFileSync(path.join(out, 'plan.json'), 'utf8')) as Record<string, unknown>;
    expect(recorded.redisRetainSeconds).toBe(600);
    // As a run interrupted before its entry ended: no result, and nothing of it left in Redis.
    const [agentId] = (recorded.runs as { agentId: string }[]).map((run) => run.agentId);
    writeFileSync(path.join(out, 'results.jsonl'), '');
    await redis.del(...(await redis.keys(`troupe:${queue}:*${agentId}*`)));
    const io = captureIO();
    expect(await main(['resume', out, ...argv], io), io.err()).toBe(0);
    const ttl = await redis.pttl(`troupe:${queue}:agent:${agentId}:journal`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600_000);
  });
});
