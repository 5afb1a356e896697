/**
 * A redis worker sends each supervisor only the credentials its own runs registered (and the
 * worker's own): supervisors that share a worker never receive each other's, not even sealed.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SecretKeyPair } from '../../../src/engines/redis/secret-box.ts';
import { registerReceived, SecretForwarder } from '../../../src/engines/redis/secret-forwarder.ts';
import type { SignalSender } from '../../../src/engines/redis/signals.ts';
import { WorkerResources } from '../../../src/engines/redis/worker-resources.ts';
import { registerSecretValues } from '../../../src/journal/redact.ts';
import type { AgentJobData, SealedSecrets, WorkerSignal } from '../../../src/protocol/redis.ts';
import { scratch, stdioEverything } from '../../mcp/helpers.ts';
import { repoRoot } from './helpers.ts';

/** A value no other test registers (this process's registered values are shared by test files). */
function fresh(label: string): string {
  return `${label}-${Math.random().toString(36).slice(2, 12)}-value`;
}

/** A worker's forwarder, with what it sent each supervisor opened with that supervisor's key. */
function forwarder(): {
  forwarder: SecretForwarder;
  job: (supervisorId: string) => AgentJobData;
  received: (supervisorId: string) => string[];
  sealedTo: (supervisorId: string) => SealedSecrets[];
} {
  const keys = new Map<string, SecretKeyPair>();
  const keysOf = (supervisorId: string): SecretKeyPair => {
    let pair = keys.get(supervisorId);
    if (pair === undefined) {
      pair = new SecretKeyPair();
      keys.set(supervisorId, pair);
    }
    return pair;
  };
  // Every seal sent, by stream; each opened once with its stream's supervisor's key (a second
  // opening is a replay), a seal for another key opening to nothing.
  const sent: [string, SealedSecrets, string[]][] = [];
  const signals = {
    send: (supervisorId: string, signal: WorkerSignal) => {
      if (signal.type !== 'secrets') return;
      const opened = keysOf(supervisorId).openValues(signal.sealed);
      sent.push([supervisorId, signal.sealed, 'values' in opened ? opened.values : []]);
    },
  };
  return {
    forwarder: new SecretForwarder(signals as unknown as SignalSender),
    job: (supervisorId) =>
      ({
        supervisorId,
        secretsKey: keysOf(supervisorId).publicKey,
        agent: { agentId: `${supervisorId}-agent` },
      }) as unknown as AgentJobData,
    received: (supervisorId) => sent.flatMap(([to, , values]) => (to === supervisorId ? values : [])),
    sealedTo: (supervisorId) => sent.flatMap(([to, sealed]) => (to === supervisorId ? [sealed] : [])),
  };
}

describe('credentials a redis worker forwards', () => {
  it('go to the supervisor whose run registered them, not to another running beside it', async () => {
    const { forwarder: secrets, job, received } = forwarder();
    const a = job('tenant-a');
    const b = job('tenant-b');
    const aValue = fresh('tenant-a');
    const bValue = fresh('tenant-b');
    try {
      const runA = secrets.within(a, async () => {
        secrets.started(a);
        await Promise.resolve();
        registerSecretValues([aValue]);
      });
      const runB = secrets.within(b, async () => {
        secrets.started(b);
        await Promise.resolve();
        registerSecretValues([bValue]);
      });
      await Promise.all([runA, runB]);
      expect(received('tenant-a')).toContain(aValue);
      expect(received('tenant-a')).not.toContain(bValue);
      expect(received('tenant-b')).toContain(bValue);
      expect(received('tenant-b')).not.toContain(aValue);
    } finally {
      secrets.close();
    }
  });

  it('go to every supervisor whose run registers them, held already or not', () => {
    const { forwarder: secrets, job, received } = forwarder();
    const a = job('tenant-a');
    const b = job('tenant-b');
    const shared = fresh('shared');
    try {
      secrets.within(a, () => {
        secrets.started(a);
        registerSecretValues([shared]);
      });
      secrets.within(b, () => {
        secrets.started(b);
        registerSecretValues([shared]);
      });
      expect(received('tenant-a')).toContain(shared);
      expect(received('tenant-b')).toContain(shared);
    } finally {
      secrets.close();
    }
  });

  it("the worker's own (registered outside every run) go to every supervisor", () => {
    const before = fresh('worker-start');
    registerSecretValues([before]);
    const { forwarder: secrets, job, received } = forwarder();
    const a = job('tenant-a');
    const b = job('tenant-b');
    const later = fresh('worker-later');
    try {
      secrets.within(a, () => secrets.started(a));
      secrets.within(b, () => secrets.started(b));
      registerSecretValues([later]);
      for (const supervisor of ['tenant-a', 'tenant-b']) {
        expect(received(supervisor)).toContain(before);
        expect(received(supervisor)).toContain(later);
      }
    } finally {
      secrets.close();
    }
  });

  it('registered by a module as it was imported go to each supervisor whose runs load it', async () => {
    const { forwarder: secrets, job, received } = forwarder();
    const modules = secrets.moduleLoader();
    const module = path.join(repoRoot, 'test/fixtures/scaleout/import-keyed-module.ts');
    const a = job('tenant-a');
    const b = job('tenant-b');
    try {
      await secrets.within(a, async () => {
        secrets.started(a);
        await modules.load(module);
      });
      await secrets.within(b, async () => {
        secrets.started(b);
        await modules.load(module);
      });
      expect(received('tenant-a')).toContain('Zt4kP9wQ1xM6vB3nR8cY');
      expect(received('tenant-b')).toContain('Zt4kP9wQ1xM6vB3nR8cY');
    } finally {
      secrets.close();
    }
  });

  it("of one worker's run are not another worker's own in the same thread", () => {
    const first = forwarder();
    const second = forwarder();
    const a = first.job('tenant-a');
    const d = second.job('tenant-d');
    const aValue = fresh('tenant-a');
    try {
      second.forwarder.within(d, () => second.forwarder.started(d));
      first.forwarder.within(a, () => {
        first.forwarder.started(a);
        registerSecretValues([aValue]);
      });
      expect(first.received('tenant-a')).toContain(aValue);
      expect(second.received('tenant-d')).not.toContain(aValue);
    } finally {
      first.forwarder.close();
      second.forwarder.close();
    }
  });

  it("of an MCP server another supervisor's run started go to each whose runs use it", async () => {
    const { forwarder: secrets, job, received } = forwarder();
    const { dir, cleanup } = scratch();
    const resources = new WorkerResources({
      modules: secrets.moduleLoader(),
      redis: undefined as never,
      pool: undefined as never,
      keys: undefined as never,
      barrier: async () => {},
    });
    const token = fresh('mcp-token');
    const server = stdioEverything(path.join(dir, 'pids'));
    const servers = {
      shared: { ...server, env: { ...(server.type === 'stdio' ? server.env : {}), API_TOKEN: token } },
    };
    const a = job('tenant-a');
    const b = job('tenant-b');
    try {
      // One connection for both: A's run starts the server (and registers its token then).
      for (const data of [a, b]) {
        const set = await secrets.within(data, () => {
          secrets.started(data);
          return resources.mcp().toolsFor(servers);
        });
        expect(set.problems).toEqual([]);
      }
      expect(received('tenant-a')).toContain(token);
      expect(received('tenant-b')).toContain(token);
    } finally {
      secrets.close();
      await resources.close();
      cleanup();
    }
  }, 30_000);

  it("received by a supervisor in the worker's thread are not the worker's own", () => {
    const { forwarder: secrets, job, received } = forwarder();
    const a = job('tenant-a');
    const b = job('tenant-b');
    const fromElsewhere = fresh('from-another-worker');
    const aValue = fresh('tenant-a');
    try {
      secrets.within(a, () => {
        secrets.started(a);
        registerSecretValues([aValue]);
      });
      secrets.within(b, () => secrets.started(b));
      // A supervisor here registers what workers sent it: one's from elsewhere, and A's own again.
      registerReceived(() => registerSecretValues([fromElsewhere]));
      registerSecretValues([aValue]);
      expect(received('tenant-a')).not.toContain(fromElsewhere);
      expect(received('tenant-b')).not.toContain(fromElsewhere);
      expect(received('tenant-b')).not.toContain(aValue);
    } finally {
      secrets.close();
    }
  });

  it("of one supervisor's runs are its own without hooking every promise, until a second's start", () => {
    // A fresh process: run contexts are per thread, and this one's tests have used them already.
    const probe = path.join(repoRoot, 'test/fixtures/scaleout/bare-runs-probe.ts');
    const child = spawnSync(process.execPath, ['--import', 'tsx', probe], { encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(0);
    const seen = JSON.parse(child.stdout.trim()) as Record<string, boolean>;
    // Node 20's AsyncLocalStorage would track every promise of the worker's thread.
    expect(seen.hookedInFirstRun).toBe(false);
    expect(seen.hookedAfterImport).toBe(false);
    expect(seen).toMatchObject({
      aGotOwn: true,
      aGotImport: true,
      aGotWorker: true,
      aGotB: false,
      bGotA: false,
      bGotWorker: true,
      bGotOwn: true,
    });
  }, 30_000);

  it('of a supervisor are not sent to a job naming it with another key', () => {
    const { forwarder: secrets, job, received, sealedTo } = forwarder();
    const b = job('tenant-b');
    const bValue = fresh('tenant-b');
    // A job someone else added to Redis, naming B, with a key of its own.
    const thief = new SecretKeyPair();
    const forged = {
      ...b,
      secretsKey: thief.publicKey,
      agent: { agentId: 'forged' },
    } as unknown as AgentJobData;
    try {
      secrets.within(b, () => {
        secrets.started(b);
        registerSecretValues([bValue]);
      });
      expect(received('tenant-b')).toContain(bValue);
      secrets.within(forged, () => secrets.started(forged));
      const stolen = sealedTo('tenant-b').flatMap((sealed) => {
        const opened = thief.openValues(sealed);
        return 'values' in opened ? opened.values : [];
      });
      expect(stolen).not.toContain(bValue);
    } finally {
      secrets.close();
    }
  });
});
