/**
 * `troupe worker --redis URL`: a scale-out worker process. It takes agent jobs from the Redis queue
 * and runs them until it is stopped; start one (or more) on every machine that should run agents.
 * SIGINT/SIGTERM stop it gracefully (running agents finish or park); a second signal exits at once,
 * and other workers resume its agents from their journals.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { resolveRedisUrl } from '../engines/redis/connection.ts';
import { DEFAULT_WORKER_CONCURRENCY } from '../engines/redis/constants.ts';
import { RedisOutageLog, watchRedisStalls } from '../engines/redis/outage-log.ts';
import { WORKER_YOUNG_GENERATION_MB, WorkerGroup } from '../engines/redis/worker-group.ts';
import { describeValue, UserError } from '../errors.ts';
import { COMMAND_HELP } from './commands.ts';
import { existingDirectory } from './shared/dir-flag.ts';
import { parseInteger } from './shared/integer-flag.ts';
import type { CliIO } from './shared/io.ts';

interface WorkerFlags {
  readonly redis?: string;
  readonly threads?: string;
  readonly concurrency?: string;
  readonly queue?: string;
  readonly prefix?: string;
  readonly cwd?: string;
  readonly lockDurationMs?: string;
  readonly stalledIntervalMs?: string;
  readonly maxStalled?: string;
}

function integer(flag: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const parsed = parseInteger(value, min);
  if (parsed === undefined) {
    throw new UserError(
      'invalid_option',
      `Expected ${flag} to be an integer >= ${min}, got ${describeValue(value)}`,
      {
        option: flag,
      },
    );
  }
  return parsed;
}

/** Registers `troupe worker` on `program`. */
export function register(program: Command, io: CliIO, setExit: (code: number) => void): void {
  program
    .command('worker')
    .description(COMMAND_HELP.worker.description)
    .option('--redis <url>', 'Redis URL (default: TROUPE_REDIS_URL)')
    .option('--threads <n>', 'worker threads, each taking jobs on its own (default: 1)')
    .option('--concurrency <n>', `agents each thread runs at once (default: ${DEFAULT_WORKER_CONCURRENCY})`)
    .option('--queue <name>', 'queue name; must match the supervisors (default: troupe-agents)')
    .option('--prefix <prefix>', 'Redis key prefix; must match the supervisors (default: troupe)')
    .option(
      '--cwd <dir>',
      "agents' working directory (default: the supervisor's if it exists here)",
      existingDirectory,
    )
    .option('--lock-duration-ms <ms>', 'job lock: a worker silent this long is taken over (default: 30000)')
    .option('--stalled-interval-ms <ms>', 'how often to look for jobs of dead workers (default: 30000)')
    .option('--max-stalled <n>', 'worker deaths one agent survives before it fails (default: 3)')
    .action(async (flags: WorkerFlags) => {
      const options = {
        ...(flags.redis === undefined ? {} : { redisUrl: flags.redis }),
        ...optional('threads', integer('--threads', flags.threads, 1)),
        ...optional('concurrency', integer('--concurrency', flags.concurrency, 1)),
        ...(flags.queue === undefined ? {} : { queueName: flags.queue }),
        ...(flags.prefix === undefined ? {} : { prefix: flags.prefix }),
        ...(flags.cwd === undefined ? {} : { cwd: resolve(flags.cwd) }),
        ...optional('lockDurationMs', integer('--lock-duration-ms', flags.lockDurationMs, 1)),
        ...optional('stalledIntervalMs', integer('--stalled-interval-ms', flags.stalledIntervalMs, 1)),
        ...optional('maxStalledCount', integer('--max-stalled', flags.maxStalled, 0)),
        // This process is ours: its workers get a large young generation (twice the hosts'), in a thread
        // (the main thread's is fixed by node flags at start, which a CLI cannot set for itself).
        youngGenerationMb: WORKER_YOUNG_GENERATION_MB,
      };
      // Handlers go in before anything is printed or started: whoever reads "ready" may signal at
      // once, and a signal that finds no handler kills the process without a graceful stop.
      let stopRequested: (signal: NodeJS.Signals | 'crashed') => void = () => {};
      const stopped = new Promise<NodeJS.Signals | 'crashed'>((resolve) => {
        stopRequested = resolve;
      });
      const exitNow = (): void => {
        // Running agents are left to expire: other workers resume them from their journals.
        process.exit(130);
      };
      const stop = (signal: NodeJS.Signals): void => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        process.once('SIGINT', exitNow);
        process.once('SIGTERM', exitNow);
        stopRequested(signal);
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      let group: WorkerGroup;
      try {
        group = await WorkerGroup.start(options);
      } catch (error) {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        throw error;
      }
      // A lost Redis is said once, and once more when it is back: not at every reconnect attempt.
      const outage = new RedisOutageLog(resolveRedisUrl(flags.redis), (line) =>
        io.stderr(`troupe worker: ${line}\n`),
      );
      group.on('error', (error) => {
        if (!outage.error(error)) io.stderr(`troupe worker: ${error.message}\n`);
      });
      // A server that stops answering without closing its connections raises no error at all.
      const stalls = watchRedisStalls(
        resolveRedisUrl(flags.redis),
        (line) => io.stderr(`troupe worker: ${line}\n`),
        {
          lost: () => outage.lost,
        },
      );
      // A worker thread that dies would leave this process idle: it ends, as it would have with
      // the worker on its main thread, so whatever restarts it does.
      group.on('exit', ({ workerId, code }) => {
        io.stderr(`troupe worker: worker ${workerId} ended unexpectedly (exit code ${code}); stopping\n`);
        stopRequested('crashed');
      });
      io.stdout(`troupe worker ready: workers ${group.ids.join(', ')} (pid ${process.pid})\n`);
      const signal = await stopped;
      outage.close();
      stalls.close();
      if (signal === 'crashed') {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        // Its agents' locks expire and other workers resume them; the others here stop too.
        await group.close(true);
        setExit(1);
        return;
      }
      io.stdout(`troupe worker: ${signal}: finishing running agents (send it again to exit now)\n`);
      await group.close();
      process.off('SIGINT', exitNow);
      process.off('SIGTERM', exitNow);
      io.stdout('troupe worker: stopped\n');
    });
}

function optional<K extends string>(key: K, value: number | undefined): { [P in K]?: number } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: number };
}
