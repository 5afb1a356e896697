/**
 * `troupe worker` and a lost Redis: one line when it is lost, one when it is back, however many
 * reconnect attempts fail in between (it printed `connect ECONNREFUSED` at every one, per
 * connection and thread), and it keeps waiting rather than exiting.
 */
import { describe, expect, it } from 'vitest';
import { isConnectionError, RedisOutageLog, RedisStallWatch } from '../../../src/engines/redis/outage-log.ts';
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

describe('RedisStallWatch', () => {
  it('says an unanswered PING once, sends no second one meanwhile, and says when it is answered', async () => {
    const lines: string[] = [];
    let pings = 0;
    let answer: () => void = () => {};
    const watch = new RedisStallWatch(
      () => {
        pings += 1;
        return pings === 1
          ? Promise.resolve('PONG')
          : new Promise((resolve) => (answer = () => resolve('PONG')));
      },
      'redis://:secret@127.0.0.1:6390',
      (line) => lines.push(line),
      { probeIntervalMs: 1, reportMs: 30 },
    );
    try {
      await waitUntil(() => lines.length === 1, 'the stall is said');
      expect(lines[0]).toMatch(
        /^Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:6390 has not answered a PING for \d+ s/,
      );
      // Many looks later: still the one line, and no PING piled up behind the unanswered one.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(lines).toHaveLength(1);
      expect(pings).toBe(2);
      answer();
      await waitUntil(() => lines.length >= 2, 'the answer is said');
      expect(lines[1]).toMatch(/answers again \(silent for about \d+ s\)$/);
      expect(lines.join('\n')).not.toContain('secret');
    } finally {
      watch.close();
    }
  });

  it('is quiet while the connection is lost: the outage log says that', async () => {
    const lines: string[] = [];
    let pings = 0;
    const watch = new RedisStallWatch(
      () => {
        pings += 1;
        return new Promise(() => {});
      },
      'redis://127.0.0.1:6390',
      (line) => lines.push(line),
      { probeIntervalMs: 1, reportMs: 1, lost: () => true },
    );
    try {
      await waitUntil(() => pings === 1, 'a PING is sent');
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(lines).toEqual([]);
    } finally {
      watch.close();
    }
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

  it('says once that a stalled Redis (SIGSTOP) does not answer, and once that it answers again', async () => {
    const server = await TestRedis.start();
    const workers = [await startWorker(server.url, [])];
    const worker = workers[0];
    const pid = server.pid;
    let stopped = false;
    try {
      if (!worker || pid === undefined) throw new Error('no worker or no redis-server');
      // Its connections stay open: no error comes, and the worker said nothing at all.
      process.kill(pid, 'SIGSTOP');
      stopped = true;
      await waitUntil(
        () => worker.output().includes('has not answered a PING'),
        'the worker says Redis stalled',
      );
      process.kill(pid, 'SIGCONT');
      stopped = false;
      await waitUntil(() => worker.output().includes('answers again'), 'the worker says Redis answers again');
      const output = worker.output();
      expect(output.match(/has not answered a PING/g)).toHaveLength(1);
      expect(output).not.toContain('lost Redis');
      expect(output).not.toContain('[exited');
    } finally {
      if (stopped && pid !== undefined) process.kill(pid, 'SIGCONT');
      await killWorkers(workers);
      await server.destroy();
    }
  });
});
