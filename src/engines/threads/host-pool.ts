/**
 * The actor-host threads: long-lived piscina tasks, one per thread, each with its own ports.
 * Detects a dead host three ways (task rejection, port close, missed heartbeats), rejects what was
 * pending on it, and starts a replacement.
 */
import { MessageChannel, type MessagePort, type ResourceLimits, type Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import { EventEmitter } from 'eventemitter3';
import { Piscina } from 'piscina';
import { type SerializedError, SystemError, serializeError } from '../../errors.ts';
import { workerEntry } from '../../package-files.ts';
import type {
  ActorSpec,
  HostConfig,
  HostControlApi,
  HostEventMessage,
  HostStats,
  HostTask,
  SupervisorCallbackApi,
} from '../../protocol/messages.ts';
import { CallbackServer } from './callback-server.ts';
import { culpritFile, fileOf, formatFrame, probeThreadStack } from './stack-probe.ts';

/** Flags a worker's execArgv refuses (ERR_WORKER_INVALID_EXEC_ARGV) that a parent may run with. */
const V8_ONLY_FLAGS: ReadonlySet<string> = new Set(['--expose-gc', '--expose_gc']);

/** How long a closed port waits for the task's rejection, which names the real cause of death. */
const PORT_CLOSE_GRACE_MS = 1000;

/**
 * How long a host that missed its heartbeats may take to be paused for its stack before it is
 * terminated without one. A busy loop pauses within milliseconds, but enabling the debugger first
 * reports every script the thread loaded, which took over 500 ms on a loaded machine (the death
 * was then blamed without a stack). A thread blocked in a system call cannot be paused: kept short
 * so that one does not run on far past its missed heartbeats meanwhile.
 */
const STACK_PROBE_TIMEOUT_MS = 1_500;

const HOST_ENTRY = workerEntry('actor-host').href;

/** One actor host: a thread running one long-lived piscina task. */
export interface HostRecord {
  readonly id: number;
  /** A quarantine host: one agent at a time, retired when it has none (see ThreadEngine). */
  readonly dedicated: boolean;
  readonly api: Comlink.Remote<HostControlApi>;
  readonly agents: Set<string>;
  threadId: number | undefined;
  /** False until the thread has loaded and said it is ready (agents may be placed on it before). */
  ready: boolean;
  alive: boolean;
  /** Settles (never rejects) when the host is found dead. */
  readonly died: Promise<SerializedError>;
  /**
   * Set when the pool terminates the host's thread ({@link HostPool.terminate}) before its death is
   * announced: its thread may run on until it settles, true once it is gone, false if it could not
   * be terminated. Unset, a dead host's thread runs none of its code any more.
   */
  stopping?: Promise<boolean>;
}

interface HostInternals {
  readonly record: HostRecord;
  readonly ports: MessagePort[];
  /** The callback, admission and inbox servers: closed when the host dies or the pool closes. */
  readonly servers: readonly { close(): void }[];
  readonly markDead: (cause: SerializedError) => void;
  /** Rejecters of calls in flight: a death fails them (each removes itself when it settles). */
  readonly pendingCalls: Set<(cause: SerializedError) => void>;
  heartbeatTimer: NodeJS.Timeout | undefined;
  missedSince: number | undefined;
  /** Shut down on purpose: its end is not a death. */
  retiring: boolean;
}

export interface HostPoolOptions {
  readonly threads: number;
  /** Threads beyond `threads` for dedicated hosts, started on demand. @default 0 */
  readonly dedicatedThreads?: number;
  readonly resourceLimits: ResourceLimits | undefined;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTimeoutMs: number;
  /** A host not ready this long after its start is terminated (`thread_start_timeout`). */
  readonly startTimeoutMs: number;
  readonly config: Omit<HostConfig, 'hostId'>;
  readonly callbacks: SupervisorCallbackApi;
  /**
   * Serves a host's admission port. The returned `close` runs when the host is found dead (before
   * `host:died`) or the pool closes, and must give back every slot the host held or waited for.
   */
  readonly serveAdmission: (host: HostRecord, port: MessagePort) => { close(): void };
  /**
   * Serves a host's inbox port (instruction waits). The returned `close` runs with admission's and
   * must drop every wait the host had parked.
   */
  readonly serveInbox: (host: HostRecord, port: MessagePort) => { close(): void };
  readonly onMessage: (host: HostRecord, message: HostEventMessage) => void;
  /** Extra Node options for the threads (V8-wide flags such as --expose-gc are not allowed). */
  readonly execArgv?: readonly string[];
}

export interface HostPoolEvents {
  'host:started': [host: HostRecord];
  /** A host died; one that dies while starting also rejects its startHost() (but agents may be on it already). */
  'host:died': [host: HostRecord, cause: SerializedError];
}

/** Starts, watches and replaces actor hosts. */
export class HostPool extends EventEmitter<HostPoolEvents> {
  readonly #options: HostPoolOptions;
  readonly #pool: Piscina<HostTask, void>;
  readonly #hosts = new Map<number, HostInternals>();
  #nextId = 0;
  #closing = false;
  #closed: Promise<void> | undefined;

  constructor(options: HostPoolOptions) {
    super();
    this.#options = options;
    this.#pool = new Piscina({
      filename: HOST_ENTRY,
      minThreads: options.threads,
      // Twice what runs at once: a thread this pool terminated is counted by piscina until its exit
      // is processed, and a host started meanwhile was queued; piscina replaces lost threads only
      // up to minThreads, so with every other thread busy for good (hosts never end) that host
      // waited for a thread that never came, until thread_start_timeout. The hosts that run at once
      // are bounded by the engine (threads + dedicatedThreads); the spare slots only let a
      // replacement start before the thread it replaces is reaped.
      maxThreads: 2 * (options.threads + (options.dedicatedThreads ?? 0)),
      idleTimeout: Number.POSITIVE_INFINITY,
      concurrentTasksPerWorker: 1,
      // 'sync' (the default) blocks idle workers in Atomics.wait, freezing their event loops.
      atomics: 'disabled',
      ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
      // Threads inherit this process's execArgv when given none; flags of our own are added to
      // it. V8-wide flags such as --expose-gc are refused in a worker's execArgv (measure() gets
      // a GC function inside the thread instead).
      ...(options.execArgv && options.execArgv.length > 0
        ? { execArgv: [...process.execArgv.filter((flag) => !V8_ONLY_FLAGS.has(flag)), ...options.execArgv] }
        : {}),
    });
    // Without a listener, a worker error event would crash the main thread.
    this.#pool.on('error', () => {});
  }

  /** Live hosts (retiring ones left out). */
  get hosts(): HostRecord[] {
    // Pushed, not map()ped: an optimized map() returns a holey array where the interpreter's is
    // packed, and the engine's #schedule, optimized on the first ones, deopted on it.
    const hosts: HostRecord[] = [];
    for (const host of this.#hosts.values()) if (host.record.alive && !host.retiring) hosts.push(host.record);
    return hosts;
  }

  /** Starts one host and resolves once it is ready to take agents. */
  async startHost(options: { readonly dedicated?: boolean } = {}): Promise<HostRecord> {
    const id = this.#nextId++;
    const control = new MessageChannel();
    const callback = new MessageChannel();
    const events = new MessageChannel();
    const admission = new MessageChannel();
    const inbox = new MessageChannel();
    let markDead: (cause: SerializedError) => void = () => {};
    const died = new Promise<SerializedError>((resolve) => {
      markDead = resolve;
    });
    const record: HostRecord = {
      id,
      api: Comlink.wrap<HostControlApi>(control.port1 as unknown as Comlink.Endpoint),
      dedicated: options.dedicated ?? false,
      agents: new Set(),
      threadId: undefined,
      ready: false,
      alive: true,
      died,
    };
    const internals: HostInternals = {
      record,
      ports: [control.port1, callback.port1, events.port1, admission.port1, inbox.port1],
      servers: [
        new CallbackServer(callback.port1, this.#options.callbacks),
        this.#options.serveAdmission(record, admission.port1),
        this.#options.serveInbox(record, inbox.port1),
      ],
      markDead: (cause) => this.#handleDeath(internals, cause, markDead),
      pendingCalls: new Set(),
      heartbeatTimer: undefined,
      missedSince: undefined,
      retiring: false,
    };
    this.#hosts.set(id, internals);

    let ready: () => void = () => {};
    const isReady = new Promise<void>((resolve) => {
      ready = resolve;
    });
    events.port1.on('message', (message: HostEventMessage) => {
      if (message.type === 'ready') {
        record.threadId = message.threadId;
        record.ready = true;
        ready();
        return;
      }
      this.#options.onMessage(record, message);
    });
    control.port1.on('close', () => {
      // The port closes as the thread dies, often before piscina rejects the task with the real
      // cause (the uncaught error, ERR_WORKER_OUT_OF_MEMORY): give that a moment to arrive.
      const timer = setTimeout(
        () =>
          internals.markDead(
            new SystemError('thread_exited', `Actor host ${id} closed its port`, { hostId: id }).toJSON(),
          ),
        PORT_CLOSE_GRACE_MS,
      );
      timer.unref();
    });

    const task: HostTask = {
      config: { ...this.#options.config, hostId: id },
      control: control.port2,
      callback: callback.port2,
      events: events.port2,
      admission: admission.port2,
      inbox: inbox.port2,
    };
    const transferList = [control.port2, callback.port2, events.port2, admission.port2, inbox.port2];
    // Aborting the task ends it wherever it is: piscina drops it from its queue, or terminates the
    // thread that runs it. Used only when the host does not get ready in time.
    const startAbort = new AbortController();
    this.#pool.run(task, { transferList: transferList as never, signal: startAbort.signal }).then(
      () =>
        internals.markDead(new SystemError('host_ended', `Actor host ${id} ended`, { hostId: id }).toJSON()),
      (error: unknown) => internals.markDead(crashCause(id, error)),
    );
    const { startTimeoutMs } = this.#options;
    let startTimer: NodeJS.Timeout | undefined;
    const tooLate = new Promise<void>((resolve) => {
      startTimer = setTimeout(resolve, startTimeoutMs);
    });
    await Promise.race([isReady, died, tooLate]);
    clearTimeout(startTimer);
    if (record.alive && !record.ready) {
      // A thread stuck loading (a module that never finishes, a starved machine) or a task piscina
      // never ran: the death comes first, so its cause is the timeout and not the abort.
      internals.markDead(
        new SystemError('thread_start_timeout', `Actor host ${id} was not ready after ${startTimeoutMs} ms`, {
          hostId: id,
          timeoutMs: startTimeoutMs,
        }).toJSON(),
      );
      startAbort.abort();
    }
    if (!record.alive) {
      const cause = await died;
      throw new SystemError('thread_start_failed', `Actor host ${id} died while starting: ${cause.message}`, {
        hostId: id,
        cause: cause.code,
      });
    }
    this.#startHeartbeat(internals);
    this.emit('host:started', record);
    return record;
  }

  /** Calls into a host; rejects if the host dies first instead of hanging. */
  async call<T>(host: HostRecord, fn: (api: Comlink.Remote<HostControlApi>) => Promise<T>): Promise<T> {
    const internals = this.#hosts.get(host.id);
    if (!host.alive || internals === undefined) throw deadHostError(host);
    // A listener per call, removed when it settles: racing every call against `host.died` would
    // leave one reaction per spawn, cancel and heartbeat on that promise for the host's lifetime.
    return new Promise<T>((resolve, reject) => {
      const onDeath = (cause: SerializedError): void =>
        reject(
          new SystemError('thread_died', `Actor host ${host.id} died: ${cause.message}`, {
            hostId: host.id,
            cause,
          }),
        );
      internals.pendingCalls.add(onDeath);
      fn(host.api)
        .then(resolve, reject)
        .finally(() => internals.pendingCalls.delete(onDeath));
    });
  }

  /**
   * Starts agents on a host with one message. Rejects if the host dies first; its death handler
   * deals with the agents.
   */
  spawnMany(host: HostRecord, specs: readonly ActorSpec[]): Promise<void> {
    return this.call(host, (api) => api.spawnMany(specs));
  }

  /**
   * Shuts a host down on purpose (a dedicated host with nothing left to run): its end emits no
   * `host:died`, and it is out of `hosts` at once. Its thread stays in the pool, idle.
   */
  retire(host: HostRecord): void {
    const internals = this.#hosts.get(host.id);
    if (!internals || internals.retiring || !host.alive) return;
    internals.retiring = true;
    if (internals.heartbeatTimer) clearInterval(internals.heartbeatTimer);
    internals.heartbeatTimer = undefined;
    this.call(host, (api) => api.shutdown('retired')).catch(() => {});
  }

  /** Stats from every live host (after a GC when threads run with --expose-gc). */
  async measure(): Promise<HostStats[]> {
    return Promise.all(this.hosts.map((host) => this.call(host, (api) => api.measure())));
  }

  /** Terminates a host's thread (a host that stopped answering). */
  async terminate(host: HostRecord, cause: SerializedError): Promise<void> {
    const internals = this.#hosts.get(host.id);
    // A dead host's thread may already run another host (piscina reuses idle threads).
    if (!internals || !host.alive) return;
    const terminated = this.#workerOf(host)?.terminate();
    // Before the death is announced: its handlers wait for the thread to be gone before they write
    // what its agents would have.
    if (terminated)
      host.stopping = terminated.then(
        () => true,
        () => false,
      );
    internals.markDead(cause);
    await terminated;
  }

  /** Asks every host to shut down, waits up to `graceMs`, then terminates what is left. */
  close(graceMs: number): Promise<void> {
    this.#closed ??= this.#close(graceMs);
    return this.#closed;
  }

  async #close(graceMs: number): Promise<void> {
    this.#closing = true;
    const live = this.hosts;
    await Promise.all(
      live.map(async (host) => {
        const internals = this.#hosts.get(host.id);
        if (internals !== undefined && !host.ready) {
          // Still loading, so it hosts no agent: a shutdown request would wait for the load to end
          // (seconds on a busy machine, and a Ctrl-C must act at once). Destroying the pool ends it.
          internals.markDead(
            new SystemError('thread_start_cancelled', `Actor host ${host.id} was closed while starting`, {
              hostId: host.id,
            }).toJSON(),
          );
          return;
        }
        if (internals?.heartbeatTimer) clearInterval(internals.heartbeatTimer);
        let timer: NodeJS.Timeout | undefined;
        const grace = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), graceMs);
        });
        const outcome = await Promise.race([
          this.call(host, (api) => api.shutdown('supervisor closed')).then(
            () => host.died,
            () => host.died,
          ),
          grace,
        ]);
        clearTimeout(timer);
        if (outcome === 'timeout') {
          await this.terminate(
            host,
            new SystemError('shutdown_timeout', 'Host did not shut down in time').toJSON(),
          );
        }
      }),
    );
    for (const internals of this.#hosts.values()) this.#dispose(internals);
    await this.#pool.destroy();
  }

  #workerOf(host: HostRecord): Worker | undefined {
    return this.#pool.threads.find((worker) => worker.threadId === host.threadId);
  }

  #startHeartbeat(internals: HostInternals): void {
    const { heartbeatIntervalMs, heartbeatTimeoutMs } = this.#options;
    let inFlight = false;
    let probing = false;
    internals.heartbeatTimer = setInterval(() => {
      const host = internals.record;
      if (!host.alive) return;
      const now = Date.now();
      if (inFlight) {
        internals.missedSince ??= now;
        if (now - internals.missedSince >= heartbeatTimeoutMs && !probing) {
          probing = true;
          void this.#terminateBlocked(host, now - internals.missedSince);
        }
        return;
      }
      inFlight = true;
      this.call(host, (api) => api.heartbeat()).then(
        () => {
          inFlight = false;
          internals.missedSince = undefined;
        },
        () => {
          inFlight = false;
        },
      );
    }, heartbeatIntervalMs);
    // Heartbeats must not keep the process alive on their own.
    internals.heartbeatTimer.unref();
  }

  /**
   * Ends a host that missed heartbeats for `missedMs`: first takes its stack (stack-probe.ts), so
   * the cause says what blocked it (fields `stack` and `culprit`, the user file it was in).
   */
  async #terminateBlocked(host: HostRecord, missedMs: number): Promise<void> {
    const threadId = host.threadId;
    const frames =
      threadId === undefined ? undefined : await probeThreadStack(threadId, STACK_PROBE_TIMEOUT_MS);
    const culprit = frames === undefined ? undefined : culpritFile(frames);
    const innermost = frames?.find((frame) => fileOf(frame.url) === culprit) ?? frames?.[0];
    const where = innermost === undefined ? '' : `; it was running ${formatFrame(innermost)}`;
    await this.terminate(
      host,
      new SystemError(
        'heartbeat_timeout',
        `Actor host ${host.id} missed heartbeats for ${missedMs} ms${where}`,
        {
          hostId: host.id,
          ...(frames === undefined ? {} : { stack: frames.map(formatFrame) }),
          ...(culprit === undefined ? {} : { culprit }),
        },
      ).toJSON(),
    );
  }

  #handleDeath(
    internals: HostInternals,
    cause: SerializedError,
    settle: (cause: SerializedError) => void,
  ): void {
    const host = internals.record;
    if (!host.alive) return;
    host.alive = false;
    settle(cause);
    for (const fail of internals.pendingCalls) fail(cause);
    internals.pendingCalls.clear();
    this.#dispose(internals);
    this.#hosts.delete(host.id);
    if (!this.#closing && !internals.retiring) this.emit('host:died', host, cause);
  }

  #dispose(internals: HostInternals): void {
    if (internals.heartbeatTimer) clearInterval(internals.heartbeatTimer);
    internals.heartbeatTimer = undefined;
    for (const server of internals.servers) server.close();
    try {
      internals.record.api[Comlink.releaseProxy]();
    } catch {
      // The port may already be closed by the dead thread; there is nothing left to release.
    }
    for (const port of internals.ports) port.close();
  }
}

function deadHostError(host: HostRecord): SystemError {
  return new SystemError('thread_died', `Actor host ${host.id} is not running`, { hostId: host.id });
}

function crashCause(hostId: number, error: unknown): SerializedError {
  const base = serializeError(error);
  const nodeCode = (error as { code?: unknown } | undefined)?.code;
  if (nodeCode === 'ERR_WORKER_OUT_OF_MEMORY') {
    return new SystemError('thread_out_of_memory', base.message, { hostId }).toJSON();
  }
  return new SystemError('thread_crashed', base.message, { hostId, nodeCode }).toJSON();
}
