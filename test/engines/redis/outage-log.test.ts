/**
 * `troupe worker` and a lost Redis: one line when it is lost, one when it is back, however many
 * reconnect attempts fail in between (it printed `connect ECONNREFUSED` at every one, per
 * connection and thread), and it keeps waiting rather than exiting.
 */
import { describe, expect, it } from 'vitest';
import { isConnectionError, RedisOutageLog } from '../../../src/engines/redis/outage-log.ts';
import { waitUntil } from '../../run-dir/helpers.ts';
import { killWorkers, redisServerPath, skipReason, startWorker, TestRedis } from './helpers.ts';

const refused = (): Error => new Error('connect ECONNREFUSED 127.0.0.1:6390');

describe('RedisOutageLog', () => {
  it('says a lost Redis once, however many connection errors, and once when a probe gets through', async () => {
    const lines: string[] = [];
    let up = false;
    const log = new RedisOutageLog('redis://:secret@127.0.0.1:6390', (line) => lines.push(line), {
      probeIntervalMs: 1,
      check: () => (up ? Promise.resolve() : Promise.reject(new Error('refused'))),
    });
    try {
      for (let i = 0; i < 50; i += 1) expect(log.error(refused())).toBe(true);
      expect(lines).toEqual([
        expect.stringContaining('lost Redis at redis://:***@127.0.0.1:6390 (connect ECONNREFUSED'),
      ]);
      expect(log.lost).toBe(true);
      up = true;
      await waitUntil(() => !log.lost, 'the probe gets through');
      expect(lines).toHaveLength(2);
      expect(lines[1]).toMatch(/^Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:6390 is back/);
      expect(lines.join('\n')).not.toContain('secret');
    } finally {
      log.close();
    }
  });

  it('leaves other errors to the caller', () => {
    const log = new RedisOutageLog('redis://127.0.0.1:6390', () => {
      throw new Error('nothing is said');
    });
    expect(log.error(new Error('WRONGPASS invalid username-password pair'))).toBe(false);
    expect(isConnectionError({ message: 'x', code: 'ECONNRESET' })).toBe(true);
    expect(isConnectionError(new Error('Connection is closed.'))).toBe(true);
    log.close();
  });
});

describe(`troupe worker while Redis is away${skipReason}`, { skip: redisServerPath === undefined }, () => {
  it('prints one line when Redis is lost and one when it is back, and keeps running', async () => {
    const server = await TestRedis.start();
    const workers = [await startWorker(server.url, [])];
    const worker = workers[0];
    try {
      if (!worker) throw new Error('no worker');
      await server.stop();
      await waitUntil(() => worker.output().includes('lost Redis at'), 'the worker says Redis is lost');
      await server.restart();
      await waitUntil(() => worker.output().includes(' is back'), 'the worker says Redis is back');
      const output = worker.output();
      expect(output.match(/lost Redis at/g)).toHaveLength(1);
      // Every ECONNREFUSED is the one in the "lost" line.
      expect(output.match(/ECONNREFUSED/g)).toHaveLength(1);
      expect(output).not.toContain('[exited');
    } finally {
      await killWorkers(workers);
      await server.destroy();
    }
  });
});
