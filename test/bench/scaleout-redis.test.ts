/**
 * The scale-out benchmark's Redis: it keeps every journal, so its automatic AOF rewrite is off (a
 * forked child rewriting the whole data set used to land in random timed runs of either side).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { redisServerPath, TestRedis } from '../fixtures/scaleout/processes.ts';

const skipped = redisServerPath === undefined ? ' (skipped: redis-server is not installed)' : '';

function rewritePercentage(port: number): string {
  const reply = execFileSync(
    'redis-cli',
    ['-p', String(port), 'CONFIG', 'GET', 'auto-aof-rewrite-percentage'],
    {
      encoding: 'utf8',
    },
  );
  return reply.trim().split('\n').at(-1) ?? '';
}

describe(`the benchmarks' Redis${skipped}`, { skip: redisServerPath === undefined }, () => {
  it('runs without automatic AOF rewrites when asked, and with Redis’s default otherwise', async () => {
    const quiet = await TestRedis.start({ appendfsync: 'everysec', autoAofRewrite: false });
    const usual = await TestRedis.start({ appendfsync: 'everysec' });
    try {
      expect(rewritePercentage(quiet.port)).toBe('0');
      expect(rewritePercentage(usual.port)).toBe('100');
    } finally {
      await Promise.all([quiet.destroy(), usual.destroy()]);
    }
  });

  it('is started that way by the scale-out benchmark and its profiling driver', () => {
    for (const file of ['bench/scaleout.ts', 'bench/support/scaleout-profile.ts']) {
      expect(readFileSync(file, 'utf8')).toContain(
        "TestRedis.start({ appendfsync: 'everysec', autoAofRewrite: false })",
      );
    }
  });
});
