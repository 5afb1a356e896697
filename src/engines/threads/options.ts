/** Options of the thread engine: documented defaults, validated once into a readonly filled object. */
import { mkdtempSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import type { ResourceLimits } from 'node:worker_threads';
import { MAX_RESTART_RETRIES } from '../../constants.ts';
import { UserError } from '../../errors.ts';
import { oneOf, positiveInt, timeLimit } from '../../option-checks.ts';

/** How agents run in this process's worker threads (`backend: 'threads'`). */
export interface ThreadBackendOptions {
  /** Actor-host threads. @default 2 (or the core count when smaller) */
  readonly threads?: number;
  /** `shared`: many agents per thread; `thread`: one agent per thread at a time. @default 'shared' */
  readonly isolation?: 'shared' | 'thread';
  /** Agents one thread hosts at once under `shared`. @default 10000 */
  readonly maxAgentsPerThread?: number;
  /** Where agent journals go. @default a new temp directory, removed by close() */
  readonly journalDir?: string;
  /**
   * Journal fsync policy. Events are written with synchronous writes, batched per event-loop
   * turn and always before the side effect that follows them (a model request, a tool's start, a
   * report to the supervisor: docs/journal.md), so a crashed thread or process loses no event
   * whose effect began, under any policy; fsync only adds safety against the machine itself going
   * down, at a large cost per agent. @default 'never'
   */
  readonly fsync?: 'always' | 'interval' | 'never';
  /** A thread whose event loop does not answer for `timeoutMs` is terminated and its agents restarted. @default { intervalMs: 1000, timeoutMs: 20000 } */
  readonly heartbeat?: { readonly intervalMs?: number; readonly timeoutMs?: number };
  /**
   * How long a thread may take from its start to being ready for agents (its modules loaded).
   * One that takes longer is terminated: at start-up the Supervisor fails with
   * `thread_start_failed` (cause `thread_start_timeout`). A crashed thread's replacement that fails
   * to start is tried three times; with no thread left after that, agents waiting for one fail
   * (`crashed`, with that cause) instead of waiting for ever. At most 2147483647 (`MAX_TIMER_MS`):
   * a longer timer fires at once. @default 60000
   */
  readonly threadStartTimeoutMs?: number;
  /**
   * Per-thread V8 limits (an agent that exceeds them crashes its thread, which is restarted).
   * @default { maxYoungGenerationSizeMb: 96 } ({@link DEFAULT_HOST_YOUNG_GENERATION_MB}) when
   * neither generation is set here; what is set here is used as given.
   */
  readonly resourceLimits?: ResourceLimits;
  /**
   * Threads, beyond `threads`, for agents blamed for a thread death: each such agent runs alone on
   * one until it ends, so a repeat offender takes no other agent with it. Blamed agents wait for
   * one when all are busy (up to `quarantineWaitMs`), except that one joins a thread an agent of
   * its own tree holds (a parent awaiting it would otherwise hold the thread it waits for), or one
   * whose agents are all parked waiting for an instruction (an idle session). @default 1
   */
  readonly quarantineThreads?: number;
  /**
   * How long a blamed agent may wait for a quarantine thread (all of them held by agents of other
   * trees). One that waits longer fails `Failed(crashed)` with SystemError `quarantine_wait_timeout`,
   * journalled; the agents holding the threads go on. At most 2147483647 (`MAX_TIMER_MS`): a longer
   * timer fires at once. @default 600000 (10 minutes)
   */
  readonly quarantineWaitMs?: number;
  /**
   * Restarts an agent gets for thread deaths it is not blamed for (it was not running a tool in
   * the thread when it died); beyond this, they count against `restart.maxRetries` too. An integer
   * from 0 to 1000 (`MAX_RESTART_RETRIES`), as `restart.maxRetries`. @default 10
   */
  readonly maxBystanderRestarts?: number;
  /**
   * Extra Node options for the threads, added to this process's own (e.g. `--conditions=...`).
   * V8-wide flags such as `--expose-gc` are not allowed in threads; `measureThreads()` collects
   * garbage without it.
   */
  readonly execArgv?: readonly string[];
}

/** How long a blamed agent waits for a quarantine thread before it fails (`quarantineWaitMs`). */
export const DEFAULT_QUARANTINE_WAIT_MS = 600_000;

/**
 * The actor hosts' young generation (MiB): twice Node's default of 48 (semi-spaces of 32 MiB
 * instead of 16), so an agent's per-request garbage dies before a scavenge copies it. A host runs
 * hundreds of agents' loops, each allocating some 400 KiB per fan-out agent: with the default a
 * host scavenged about every 35 agents (bench/RESULTS.md, host24). Memory: V8 grows the young
 * generation only while much survives, up to ~32 MiB more per busy thread than the default; the
 * heap after a full GC (what an idle agent costs) is unchanged.
 */
export const DEFAULT_HOST_YOUNG_GENERATION_MB = 96;

/**
 * The hosts' V8 limits: the user's as given when they set either generation (a capped heap gets
 * V8's own young size for that cap), otherwise theirs plus the default young generation.
 */
export function hostResourceLimits(limits: ResourceLimits | undefined): ResourceLimits {
  if (limits?.maxYoungGenerationSizeMb !== undefined || limits?.maxOldGenerationSizeMb !== undefined) {
    return limits;
  }
  return { ...limits, maxYoungGenerationSizeMb: DEFAULT_HOST_YOUNG_GENERATION_MB };
}

/** Thread options with every default filled in. */
export interface PreparedThreadOptions {
  readonly threads: number;
  readonly isolation: 'shared' | 'thread';
  readonly maxAgentsPerThread: number;
  readonly journalDir: string;
  /** The journal directory was created for this supervisor and is removed by close(). */
  readonly ownsJournalDir: boolean;
  readonly fsync: 'always' | 'interval' | 'never';
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTimeoutMs: number;
  readonly threadStartTimeoutMs: number;
  readonly resourceLimits: ResourceLimits;
  readonly quarantineThreads: number;
  readonly quarantineWaitMs: number;
  readonly maxBystanderRestarts: number;
  readonly execArgv: readonly string[];
}

/**
 * Validates thread options once and fills defaults. Throws UserError `invalid_option`. A temporary
 * journal directory is created only when `createJournalDir` (the redis engine writes no files).
 */
export function prepareThreadOptions(
  options: ThreadBackendOptions,
  createJournalDir: boolean,
): PreparedThreadOptions {
  // Node fires a longer timer at once: a heartbeat check every millisecond.
  const heartbeatIntervalMs = timeLimit(
    'heartbeat.intervalMs',
    options.heartbeat?.intervalMs,
    1000,
    'positive integer',
  );
  const heartbeatTimeoutMs = timeLimit(
    'heartbeat.timeoutMs',
    options.heartbeat?.timeoutMs,
    20_000,
    'positive integer',
  );
  if (heartbeatTimeoutMs < heartbeatIntervalMs) {
    throw new UserError(
      'invalid_option',
      'Expected `heartbeat.timeoutMs` to be at least `heartbeat.intervalMs`',
      { option: 'heartbeat.timeoutMs' },
    );
  }
  const checked = {
    threads: positiveInt('threads', options.threads, Math.max(1, Math.min(2, availableParallelism()))),
    isolation: oneOf('isolation', options.isolation, ['shared', 'thread'], 'shared'),
    maxAgentsPerThread: positiveInt('maxAgentsPerThread', options.maxAgentsPerThread, 10_000),
    fsync: oneOf('fsync', options.fsync, ['always', 'interval', 'never'], 'never'),
    heartbeatIntervalMs,
    heartbeatTimeoutMs,
    threadStartTimeoutMs: timeLimit(
      'threadStartTimeoutMs',
      options.threadStartTimeoutMs,
      60_000,
      'positive integer',
    ),
    resourceLimits: hostResourceLimits(options.resourceLimits),
    quarantineThreads: positiveInt('quarantineThreads', options.quarantineThreads, 1),
    quarantineWaitMs: timeLimit(
      'quarantineWaitMs',
      options.quarantineWaitMs,
      DEFAULT_QUARANTINE_WAIT_MS,
      'positive integer',
    ),
    maxBystanderRestarts: positiveInt(
      'maxBystanderRestarts',
      options.maxBystanderRestarts,
      10,
      0,
      MAX_RESTART_RETRIES,
    ),
    execArgv: options.execArgv ?? [],
  };
  // Last, once every option is known to be valid: an invalid one must not leave a directory behind.
  const ownsJournalDir = options.journalDir === undefined && createJournalDir;
  const journalDir = options.journalDir
    ? path.resolve(options.journalDir)
    : createJournalDir
      ? mkdtempSync(path.join(tmpdir(), 'troupe-journals-'))
      : tmpdir();
  return { ...checked, journalDir, ownsJournalDir };
}
