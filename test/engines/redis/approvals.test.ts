/**
 * Approvals on the redis backend, with real `troupe worker` processes: a decision made by another
 * Redis client (`troupe approve`'s RemoteApprovals) reaches the agent, and a worker SIGKILLed while
 * a call waits, or after approval before the tool finished, causes no second ask, no second run
 * and no run of a denied call.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RemoteApprovals } from '../../../src/engines/redis/remote-approvals.ts';
import { INTERRUPTED_TOOL_RESULT } from '../../../src/journal/constants.ts';
import type { AuditEvent, EventOf } from '../../../src/journal/events.ts';
import type { AgentApproval } from '../../../src/supervisor/events.ts';
import { RedisSupervisor } from '../../../src/supervisor/redis-supervisor.ts';
import { planTask } from '../../fixtures/approvals/plan-provider.ts';
import { startCli } from '../../run-dir/helpers.ts';
import {
  chainProblem,
  definition,
  killWorkers,
  redisServerPath,
  repoRoot,
  skipReason,
  startWorker,
  TestRedis,
  type TestWorker,
  uniqueName,
} from './helpers.ts';

const PREFIX = 'troupe-approvals';
const fixtures = path.join(repoRoot, 'test/fixtures/approvals');
/** Short locks, so a SIGKILLed worker's job is taken over quickly. */
const TIMING = ['--lock-duration-ms', '1500', '--stalled-interval-ms', '500'];

const ofType = <T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T) =>
  events.filter((event): event is EventOf<T> => event.type === type);

describe(`approvals on the redis backend${skipReason}`, { skip: redisServerPath === undefined }, () => {
  let server: TestRedis;
  let root: string;
  let workers: TestWorker[] = [];
  let supervisor: RedisSupervisor | undefined;
  let remote: RemoteApprovals | undefined;

  beforeAll(async () => {
    server = await TestRedis.start();
    root = mkdtempSync(path.join(tmpdir(), 'troupe-redis-approvals-'));
  });

  afterEach(async () => {
    await remote?.close();
    remote = undefined;
    await supervisor?.close();
    supervisor = undefined;
    await killWorkers(workers);
    workers = [];
  });

  afterAll(async () => {
    await server?.destroy();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  function start(queueName: string, ask: string) {
    const dir = mkdtempSync(path.join(root, 'run-'));
    supervisor = new RedisSupervisor({
      redisUrl: server.url,
      queueName,
      prefix: PREFIX,
      providers: { plan: { kind: 'module', module: path.join(fixtures, 'plan-provider.ts') } },
      definitions: [definition('asker', { permissions: { allow: [], ask: [ask], deny: [] } })],
      toolModules: [{ module: path.join(fixtures, 'tools.ts') }],
      compat: false,
      cwd: dir,
      // Decided by another client (RemoteApprovals): a request waits for it.
      approvals: { unattended: 'wait' },
    });
    const actions = (): string[][] => {
      const file = path.join(dir, 'actions.log');
      if (!existsSync(file)) return [];
      return readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => line.split('\t'));
    };
    /** Resolves once the tool fixture has recorded an action (it writes before it hangs). */
    const acted = (): Promise<void> =>
      new Promise((resolve) => {
        const watcher = watch(dir, () => {
          if (actions().length === 0) return;
          watcher.close();
          resolve();
        });
        if (actions().length > 0) {
          watcher.close();
          resolve();
        }
      });
    return { supervisor, actions, acted };
  }

  async function workerPair(
    queueName: string,
  ): Promise<(() => Promise<TestWorker>) & { doomed: TestWorker }> {
    const args = ['--queue', queueName, '--prefix', PREFIX, '--concurrency', '2', ...TIMING];
    const doomed = await startWorker(server.url, args);
    workers.push(doomed);
    const survivor = async (): Promise<TestWorker> => {
      const worker = await startWorker(server.url, args);
      workers.push(worker);
      return worker;
    };
    return Object.assign(survivor, { doomed });
  }

  it('a worker SIGKILLed while a call waits: another client approves it, the next worker runs it once, nobody is asked twice', async () => {
    const queueName = uniqueName('approve-wait');
    const startSurvivor = await workerPair(queueName);
    const { supervisor: sup, actions } = start(queueName, 'record_action');
    const approvals: AgentApproval[] = [];
    const asked = new Promise<AgentApproval>((resolve) =>
      sup.on('agent:approval', (event) => {
        approvals.push(event);
        resolve(event);
      }),
    );
    const restarted = new Promise<void>((resolve) => sup.on('agent:restarted', () => resolve()));
    const handle = sup.spawn('asker', {
      task: planTask([{ name: 'record_action', args: { note: 'gated' } }]),
    });

    const { request } = await asked;
    startSurvivor.doomed.kill('SIGKILL');
    await startSurvivor.doomed.exited;
    await startSurvivor();
    await restarted;
    remote = await RemoteApprovals.connect({ redisUrl: server.url, queueName, prefix: PREFIX });
    // Still listed for deciders after its worker died, under the same request id.
    expect((await remote.pending()).map((pending) => pending.requestId)).toEqual([request.requestId]);
    await remote.decide(request.requestId.slice(0, 12), {
      approved: true,
      by: 'person',
      decider: 'test client',
      remember: 'call',
    });

    expect(await handle.result).toMatchObject({ status: 'completed', answer: 'last result: recorded gated' });
    expect(actions()).toEqual([[handle.id, 'record_action', 'gated']]);
    expect(approvals).toHaveLength(1);
    const journal = await sup.journal(handle.id);
    expect(chainProblem(journal)).toBeUndefined();
    expect(ofType(journal, 'ApprovalRequested')).toHaveLength(1);
    expect(ofType(journal, 'ApprovalDecided')).toMatchObject([
      { approved: true, by: 'person', decider: 'test client' },
    ]);
    expect(await remote.pending()).toEqual([]);
  });

  it('a worker SIGKILLed after approval, while the tool runs: the call is settled as interrupted, never asked or run again', async () => {
    const queueName = uniqueName('approve-run');
    const startSurvivor = await workerPair(queueName);
    const { supervisor: sup, actions, acted } = start(queueName, 'hang_on_run');
    const approvals: AgentApproval[] = [];
    sup.on('agent:approval', (event) => {
      approvals.push(event);
      void sup.approve(event.request.requestId);
    });
    const handle = sup.spawn('asker', { task: planTask([{ name: 'hang_on_run', args: { note: 'once' } }]) });

    await acted();
    startSurvivor.doomed.kill('SIGKILL');
    await startSurvivor.doomed.exited;
    await startSurvivor();

    expect(await handle.result).toMatchObject({
      status: 'completed',
      answer: `last result: ${INTERRUPTED_TOOL_RESULT}`,
    });
    expect(actions()).toEqual([[handle.id, 'hang_on_run', 'once']]);
    expect(approvals).toHaveLength(1);
    const journal = await sup.journal(handle.id);
    expect(ofType(journal, 'ApprovalRequested')).toHaveLength(1);
    expect(ofType(journal, 'ApprovalDecided')).toMatchObject([{ approved: true }]);
    expect(ofType(journal, 'ToolResult')).toMatchObject([{ ok: false, text: INTERRUPTED_TOOL_RESULT }]);
  });

  it('a call denied with troupe approve from another process is never run, even when its worker is SIGKILLed after the denial', async () => {
    const queueName = uniqueName('deny');
    const startSurvivor = await workerPair(queueName);
    const { supervisor: sup, actions } = start(queueName, 'record_action');
    const approvals: AgentApproval[] = [];
    const asked = new Promise<AgentApproval>((resolve) =>
      sup.on('agent:approval', (event) => {
        approvals.push(event);
        resolve(event);
      }),
    );
    // Denied, then the agent waits for an instruction on the doomed worker.
    const handle = sup.spawn('asker', {
      task: planTask([
        { name: 'record_action', args: { note: 'denied' } },
        { name: 'wait_for_instruction', args: {} },
      ]),
    });
    const { request } = await asked;
    const waiting = new Promise<void>((resolve) => sup.on('agent:waiting', () => resolve()));
    // `troupe approve` from another process lists the request and denies it.
    const where = ['--redis', server.url, '--queue', queueName, '--prefix', PREFIX];
    const listed = startCli(['approve', ...where], { cwd: root });
    expect(await listed.exited, listed.stderr()).toBe(0);
    expect(listed.stdout()).toContain(`${request.requestId}  `);
    expect(listed.stdout()).toContain('record_action {"note":"denied"}');
    const denied = startCli(
      ['approve', request.requestId.slice(0, 10), '--deny', 'not on a Friday', ...where],
      {
        cwd: root,
      },
    );
    expect(await denied.exited, denied.stderr()).toBe(0);
    expect(denied.stdout()).toContain(`denied ${request.requestId}`);
    await waiting;
    startSurvivor.doomed.kill('SIGKILL');
    await startSurvivor.doomed.exited;
    await startSurvivor();
    handle.send('finish');

    expect(await handle.result).toMatchObject({
      status: 'completed',
      answer: 'last result: Instruction: finish',
    });
    expect(actions()).toEqual([]);
    expect(approvals).toHaveLength(1);
    const journal = await sup.journal(handle.id);
    const results = ofType(journal, 'ToolResult');
    expect(results[0]).toMatchObject({ ok: false, refused: true });
    expect(results[0]?.text).toContain('not on a Friday');
    expect(ofType(journal, 'ApprovalRequested')).toHaveLength(1);
    expect(ofType(journal, 'ApprovalDecided')).toMatchObject([
      { approved: false, by: 'person', decider: expect.stringMatching(/^troupe approve \(/) },
    ]);
    const after = startCli(['approve', ...where], { cwd: root });
    expect(await after.exited).toBe(0);
    expect(after.stdout()).toBe('no tool call is waiting for approval\n');
  });
});
