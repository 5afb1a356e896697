/**
 * The two engines as the contract suite runs them: the same Supervisor options, plus what each
 * engine needs. Threads: the default heartbeat, as no case needs a stuck thread found (a 6 s one
 * restarted agents on a loaded machine: a second Resumed in the crash case at load 9-12). Redis: a
 * real redis-server on 127.0.0.1 and two `troupe worker` processes with short job locks, replaced
 * when a test kills one.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SupervisorOptions } from '../../src/supervisor/options.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import {
  killWorkers,
  redisServerPath,
  startWorker,
  TestRedis,
  type TestWorker,
} from '../fixtures/scaleout/processes.ts';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures');
export const policyProvider = path.join(fixtures, 'supervisor/policy-provider.ts');
export const contractTools = path.join(fixtures, 'engines/contract-tools.ts');
export const flakyProvider = path.join(fixtures, 'cli/flaky-provider.ts');
export const scriptedProvider = path.join(fixtures, 'mcp/scripted-provider.ts');

/** One engine, set up for the suite. */
export interface EngineHarness {
  readonly name: 'threads' | 'redis';
  /** Why the engine cannot run here, if it cannot. */
  readonly skip: string | undefined;
  /** Once before the suite. */
  setup(): Promise<void>;
  /** Before each test: workers a previous test killed are replaced. */
  ready(): Promise<void>;
  /** A supervisor on this engine, working in a fresh directory (`cwd`). */
  supervisor(options?: SupervisorOptions): { supervisor: Supervisor; cwd: string };
  /** Once after the suite. */
  teardown(): Promise<void>;
}

const dirs: string[] = [];

function freshDir(): string {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'troupe-contract-')));
  dirs.push(dir);
  return dir;
}

function common(cwd: string): SupervisorOptions {
  return {
    cwd,
    providers: {
      policy: { kind: 'module', module: policyProvider },
      simulated: { kind: 'simulated' },
    },
    defaultProvider: 'policy',
    toolModules: [{ module: contractTools }],
    restart: { maxRetries: 3, baseDelayMs: 10, maxDelayMs: 50 },
    graceMs: 3000,
  };
}

function removeDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export const threadsHarness: EngineHarness = {
  name: 'threads',
  skip: undefined,
  setup: async () => {},
  ready: async () => {},
  supervisor(options = {}) {
    const cwd = freshDir();
    const supervisor = new Supervisor({
      ...common(cwd),
      threads: 2,
      journalDir: path.join(cwd, 'journals'),
      ...options,
    });
    return { supervisor, cwd };
  },
  teardown: async () => removeDirs(),
};

/** Two workers on one queue; the job lock is short, so a dead worker's agents move within ~2 s. */
function redisHarness(): EngineHarness {
  let server: TestRedis | undefined;
  let workers: TestWorker[] = [];
  const queueName = `contract-${Math.random().toString(36).slice(2, 10)}`;
  const args = [
    '--queue',
    queueName,
    '--concurrency',
    '16',
    '--lock-duration-ms',
    '1000',
    '--stalled-interval-ms',
    '500',
  ];
  const alive = new Set<TestWorker>();
  const launch = async (url: string): Promise<void> => {
    const worker = await startWorker(url, args);
    alive.add(worker);
    void worker.exited.then(() => alive.delete(worker));
    workers.push(worker);
  };
  return {
    name: 'redis',
    skip:
      redisServerPath === undefined ? 'redis-server is not installed (apt install redis-server)' : undefined,
    async setup() {
      server = await TestRedis.start();
      const url = server.url;
      await Promise.all([launch(url), launch(url)]);
    },
    async ready() {
      const url = server?.url;
      if (url === undefined) return;
      while (alive.size < 2) await launch(url);
    },
    supervisor(options = {}) {
      const cwd = freshDir();
      const supervisor = new Supervisor({
        ...common(cwd),
        backend: 'redis',
        redisUrl: server?.url,
        queueName,
        ...options,
      });
      return { supervisor, cwd };
    },
    async teardown() {
      await killWorkers(workers);
      workers = [];
      await server?.destroy();
      removeDirs();
    },
  };
}

export const harnesses: readonly EngineHarness[] = [threadsHarness, redisHarness()];
