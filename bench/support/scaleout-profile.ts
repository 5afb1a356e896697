/**
 * The redis side of `scaleout.redisVsThreads` alone, for profiling the worker processes: a local
 * redis-server, two `troupe worker` processes (started with `--cpu-prof` when `--prof DIR` is
 * given, and stopped with SIGTERM so they write their profiles), 20 agents and one full fan-out to
 * warm up, then `--runs` timed fan-outs of `--agents` agents. Prints, per timed run, wall time and
 * the CPU µs per model request of the workers, redis-server and this process, the Redis commands
 * per request (`INFO commandstats`) and the monotonic-clock window of the timed runs for
 * `profile-summary.ts --between`.
 *
 *   node --import tsx bench/support/scaleout-profile.ts [--agents 1000] [--runs 3] [--prof DIR] [--slowlog [--by-key]]
 */
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { RedisSupervisor } from '../../src/supervisor/redis-supervisor.ts';
import { TestRedis } from '../../test/fixtures/scaleout/processes.ts';
import { processCpuMs } from './thread-cpu.ts';
import { assertCompleted, NOOP_TOOL_MODULE, scratchDir, workerDefinition } from './workload.ts';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '3' },
    prof: { type: 'string' },
    /**
     * Log every command of the timed runs in Redis's slow log and print the server µs per request
     * of each script (by its first key's last segment) and command: what `INFO commandstats` lumps
     * together as `evalsha`. Adds the log's own cost to the server's CPU.
     */
    slowlog: { type: 'boolean', default: false },
    /** With --slowlog: name each plain command by the kind of its first key too. */
    'by-key': { type: 'boolean', default: false },
    /** Write each worker's stdout (e.g. `--trace-gc` output) to `<prefix>.<pid>.log`. */
    'worker-log': { type: 'string' },
    /** Extra node flags for the worker processes, space-separated (`--worker-flags=--trace-gc`). */
    'worker-flags': { type: 'string', default: '' },
  },
});
const agents = Number(values.agents);
const runs = Number(values.runs);
const ROUNDS = 5;
const requests = agents * (ROUNDS + 1);

const cpuMs = (pid: number | undefined): number => processCpuMs(pid) ?? Number.NaN;

/** Read and write system calls of a process so far (`/proc/<pid>/io`: syscr, syscw). */
function syscalls(pid: number | undefined): [number, number] {
  if (pid === undefined) return [Number.NaN, Number.NaN];
  const text = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(text)?.[1]);
  return [field('syscr'), field('syscw')];
}

/** Calls and server-side µs (`usec`, inner commands of scripts included in the script's) per command. */
function commandCalls(port: number): Map<string, { calls: number; usec: number }> {
  const text = execFileSync('redis-cli', ['-p', String(port), 'INFO', 'commandstats'], { encoding: 'utf8' });
  const calls = new Map<string, { calls: number; usec: number }>();
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    if (match[1] !== undefined) calls.set(match[1], { calls: Number(match[2]), usec: Number(match[3]) });
  }
  return calls;
}

const definition = workerDefinition();
const cwd = scratchDir('scaleout-profile');
const redis = await TestRedis.start({ appendfsync: 'everysec', autoAofRewrite: false });
const queueName = `profile-${process.pid}`;
const supervisor = new RedisSupervisor({
  cwd: cwd.dir,
  compat: false,
  definitions: [definition],
  toolModules: [NOOP_TOOL_MODULE],
  providers: { simulated: { kind: 'simulated' as const, options: { rounds: ROUNDS, latency: 10 } } },
  redisUrl: redis.url,
  queueName,
});
interface Worker {
  readonly pid: number | undefined;
  readonly exited: Promise<void>;
  kill(signal: NodeJS.Signals): void;
}
// Not test/fixtures' startWorker: --cpu-prof is not allowed in NODE_OPTIONS.
function startWorker(args: readonly string[]): Promise<Worker> {
  const flags = [
    ...(values.prof === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${values.prof}`]),
    ...(values['worker-flags'] ?? '').split(' ').filter((flag) => flag !== ''),
  ];
  const child = spawn(
    process.execPath,
    [...flags, 'bin/troupe.mjs', 'worker', '--redis', redis.url, ...args],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const log =
    values['worker-log'] === undefined
      ? undefined
      : createWriteStream(`${values['worker-log']}.${child.pid}.log`);
  if (log) child.stdout.pipe(log);
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('troupe worker ready')) {
        resolve({ pid: child.pid, exited, kill: (signal) => child.kill(signal) });
      }
    });
    void exited.then(() => reject(new Error(`worker exited: ${output}`)));
  });
}
let workers: Worker[] = [];
const fanOut = async (count: number): Promise<void> => {
  const results = await supervisor
    .fanOut(Array.from({ length: count }, (_, index) => ({ agent: definition.name, task: `Task ${index}` })))
    .all();
  assertCompleted(
    results.map((r) => r.outcome),
    'scaleout-profile',
  );
};
try {
  const args = ['--queue', queueName, '--concurrency', String(agents / 2)];
  workers = await Promise.all([startWorker(args), startWorker(args)]);
  await supervisor.start();
  await fanOut(20);
  await fanOut(agents);
  const from = process.hrtime.bigint() / 1000n;
  const cli = (...args: string[]): string =>
    execFileSync('redis-cli', ['-p', String(redis.port), ...args], { encoding: 'utf8' });
  if (values.slowlog) {
    cli('CONFIG', 'SET', 'slowlog-max-len', String(requests * runs * 20));
    cli('SLOWLOG', 'RESET');
    cli('CONFIG', 'SET', 'slowlog-log-slower-than', '0');
  }
  const callsBefore = commandCalls(redis.port);
  for (let run = 0; run < runs; run += 1) {
    const w0 = workers.map((w) => cpuMs(w.pid));
    const r0 = cpuMs(redis.pid);
    const io0 = workers.map((w) => syscalls(w.pid));
    const s0 = process.cpuUsage();
    const start = performance.now();
    await fanOut(agents);
    const wall = performance.now() - start;
    const s = process.cpuUsage(s0);
    const w = workers.map((worker, i) => cpuMs(worker.pid) - (w0[i] ?? 0));
    const r = cpuMs(redis.pid) - r0;
    const io = workers.map((worker, i) => {
      const [reads, writes] = syscalls(worker.pid);
      return [reads - (io0[i]?.[0] ?? 0), writes - (io0[i]?.[1] ?? 0)] as const;
    });
    const sum = (k: 0 | 1): number => io.reduce((total, pair) => total + pair[k], 0) / requests;
    const us = (ms: number): string => ((ms * 1000) / requests).toFixed(1);
    process.stdout.write(
      `run ${run}: wall ${wall.toFixed(0)} ms; CPU µs/request: workers ${us(w.reduce((a, b) => a + b, 0))} (${w.map(us).join(' + ')}), redis-server ${us(r)}, supervisor ${us((s.user + s.system) / 1000)}; worker syscalls/request: read ${sum(0).toFixed(2)}, write ${sum(1).toFixed(2)}; load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}\n`,
    );
  }
  const to = process.hrtime.bigint() / 1000n;
  const callsAfter = commandCalls(redis.port);
  const perRequest = [...callsAfter]
    .map(([name, after]) => {
      const before = callsBefore.get(name);
      const per = (n: number): number => n / (requests * runs);
      return [name, per(after.calls - (before?.calls ?? 0)), per(after.usec - (before?.usec ?? 0))] as const;
    })
    .filter(([name, n]) => n > 0.001 && name !== 'info')
    .sort((a, b) => b[1] - a[1]);
  const total = perRequest.reduce((sum, [, n]) => sum + n, 0);
  process.stdout.write(
    `commands/request ${total.toFixed(2)}: ${perRequest.map(([name, n]) => `${name} ${n.toFixed(2)}`).join(', ')}\n`,
  );
  // A script's inner commands are counted in their own rows and again in the script's usec.
  process.stdout.write(
    `server µs/request by command: ${[...perRequest]
      .sort((a, b) => b[2] - a[2])
      .filter(([, , us]) => us >= 0.05)
      .map(([name, , us]) => `${name} ${us.toFixed(1)}`)
      .join(', ')}\n`,
  );
  if (values.slowlog) {
    cli('CONFIG', 'SET', 'slowlog-log-slower-than', '-1');
    // Entries: id, time, µs, args (command, ...), client, name; blank-line separated in --no-raw.
    const reply = JSON.parse(
      execFileSync('redis-cli', ['-p', String(redis.port), '--json', 'SLOWLOG', 'GET', '-1'], {
        encoding: 'utf8',
        maxBuffer: 1 << 30,
      }),
    ) as [number, number, number, string[], string, string][];
    const byName = new Map<string, { calls: number; us: number }>();
    for (const [, , us, args, , client] of reply) {
      const command = (args[0] ?? '').toLowerCase();
      if (command === 'slowlog' || command === 'config' || command === 'info') continue;
      // --by-key: a plain command named by its first key's kind too (the key's last segment, or
      // `agent:<kind>` for troupe's per-agent keys), to tell which code issued it.
      const kind = (key: string | undefined): string => {
        const parts = (key ?? '').split(':');
        const agent = parts.indexOf('agent');
        return agent >= 0
          ? `agent:${parts[agent + 2] ?? ''}`
          : (parts.at(-1) ?? '').replace(/^[0-9a-f-]{36}$/, '<uuid>');
      };
      const name =
        command === 'evalsha' || command === 'eval'
          ? `script ${(args[3] ?? '').split(':').slice(-1)[0]}${values['by-key'] ? '' : `, ${args[2]} keys`} (${client})`
          : values['by-key']
            ? `${command} ${kind(args[1])} (${client})`
            : `${command} (${client})`;
      const entry = byName.get(name) ?? { calls: 0, us: 0 };
      entry.calls += 1;
      entry.us += us;
      byName.set(name, entry);
    }
    const n = requests * runs;
    process.stdout.write(
      `slowlog (server µs/request, calls/request), ${reply.length} entries:\n${[...byName]
        .sort((a, b) => (values['by-key'] ? b[1].calls - a[1].calls : b[1].us - a[1].us))
        .slice(0, values['by-key'] ? 60 : 20)
        .map(
          ([name, e]) =>
            `  ${(e.us / n).toFixed(1).padStart(6)} ${(e.calls / n).toFixed(2).padStart(6)}  ${name}`,
        )
        .join('\n')}\n`,
    );
  }
  process.stdout.write(`--between ${from},${to}\n`);
} finally {
  await supervisor.close();
  for (const worker of workers) worker.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
  await redis.destroy();
  cwd.remove();
}
