/**
 * `troupe fanout` running an orchestrator killed with SIGKILL while it awaits its two workers (one
 * finished, one in the middle of a model request), then `troupe resume RUN_DIR` in a new process:
 * the new supervisor adopts the workers from their journals, so the run finishes with exactly the
 * two workers, each run once to its end, and the orchestrator's answer. The kill comes at an exact
 * place: the model server holds the second worker's request, and the test waits until the journals
 * show the first worker's end and the orchestrator's await_agents call.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../src/journal/events.ts';
import {
  type Child,
  journalEvents,
  PROVIDER_ENV,
  Project,
  spawnTroupe,
} from '../fixtures/cli/cli-helpers.ts';
import { type OrchestrationServer, startOrchestrationServer } from '../fixtures/cli/orchestration-server.ts';

let project: Project;
let server: OrchestrationServer;
let saved: Record<string, string | undefined>;
const children: Child[] = [];

beforeEach(async () => {
  project = new Project();
  server = await startOrchestrationServer();
  saved = Object.fromEntries(['HOME', ...PROVIDER_ENV].map((name) => [name, process.env[name]]));
  for (const name of PROVIDER_ENV) delete process.env[name];
  process.env.HOME = project.home;
});

afterEach(async () => {
  for (const child of children.splice(0)) if (child.process.exitCode === null) child.process.kill('SIGKILL');
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await server.close();
  project.remove();
});

function writePlan(baseURL: string): string {
  project.write(
    'orchestrator.md',
    [
      '---',
      'name: orchestrator',
      'description: Splits the work between two workers and reports what they did.',
      'tools: [spawn_agent, await_agents, complete_task]',
      '---',
      'Spawn two workers, await them, then complete with their statuses.',
      '',
    ].join('\n'),
  );
  return project.write(
    'plan.yaml',
    [
      'name: orchestration killed half way',
      'cwd: .',
      'threads: 2',
      'provider: openai',
      'model: orchestration-model',
      'providerOptions:',
      `  baseURL: ${baseURL}`,
      '  apiKey: sk-test-orchestration-000000000',
      'agents: [orchestrator.md]',
      'runs:',
      '  - { agent: orchestrator, task: "Split the work between two workers." }',
      '',
    ].join('\n'),
  );
}

/** Events of every journal in `dir`, by agent id. */
function journals(dir: string): Map<string, AuditEvent[]> {
  const all = new Map<string, AuditEvent[]>();
  if (!existsSync(dir)) return all;
  for (const file of readdirSync(dir)) {
    if (file.endsWith('.jsonl'))
      all.set(file.slice(0, -'.jsonl'.length), journalEvents(path.join(dir, file)));
  }
  return all;
}

/** Resolves once `ready` holds for the journals (polled a bounded number of times, never timed). */
async function untilJournals(dir: string, ready: (all: Map<string, AuditEvent[]>) => boolean): Promise<void> {
  for (let poll = 0; poll < 3000; poll += 1) {
    if (ready(journals(dir))) return;
    await delay(10);
  }
  throw new Error(`the journals never got there: ${JSON.stringify([...journals(dir).keys()])}`);
}

const ended = (events: readonly AuditEvent[]) =>
  events.filter((event) => event.type === 'Completed' || event.type === 'Failed');
const taskOf = (events: readonly AuditEvent[]) => (events[0]?.type === 'Started' ? events[0].task : '');
/** The plan entry's agent id: the one journal whose Started names no parent. */
const leadOf = (all: Map<string, AuditEvent[]>) =>
  [...all.entries()].find(
    ([, events]) => events[0]?.type === 'Started' && events[0].parentId === undefined,
  )?.[0] ?? '';

describe('troupe fanout killed with SIGKILL mid-orchestration, then troupe resume RUN_DIR', () => {
  it.runIf(process.platform !== 'win32')(
    'finishes with exactly the two workers, each run once to its end, and the orchestrator’s answer',
    async () => {
      const plan = writePlan(server.baseURL);
      const out = project.path('run');
      const journalDir = path.join(out, 'journals');
      const run = spawnTroupe(project, ['fanout', plan, '--out', out, '--json']);
      children.push(run);
      await server.held;
      // The first worker ended, and the orchestrator is inside await_agents (its ToolCall is
      // written before the call starts): the second worker's request is held by the server.
      await untilJournals(journalDir, (all) => {
        const lead = all.get(leadOf(all)) ?? [];
        const done = [...all.values()].some((e) => taskOf(e).startsWith('Worker 1') && ended(e).length === 1);
        return done && lead.some((e) => e.type === 'ToolCall' && e.name === 'await_agents');
      });
      run.process.kill('SIGKILL');
      expect(await run.exited).toMatchObject({ signal: 'SIGKILL' });
      const killed = journals(journalDir);
      const leadId = leadOf(killed);
      expect(killed.size).toBe(3);
      expect(ended(killed.get(leadId) ?? [])).toEqual([]);

      server.hold = false;
      const resume = spawnTroupe(project, ['resume', out, '--json']);
      children.push(resume);
      const exit = await resume.exitedOrStuck(120_000);
      expect(exit, `stdout:\n${resume.stdout}\nstderr:\n${resume.stderr}`).toMatchObject({ code: 0 });

      const all = journals(journalDir);
      // Exactly the two workers: without adoption the resumed orchestrator's await_agents knew
      // neither of them, and the second worker was never resumed.
      expect(all.size).toBe(3);
      const workers = [...all.entries()].filter(([id]) => id !== leadId);
      expect(workers.map(([, events]) => taskOf(events).slice(0, 8)).sort()).toEqual([
        'Worker 1',
        'Worker 2',
      ]);
      for (const [id, events] of workers) {
        expect(events.filter((e) => e.type === 'Started')).toMatchObject([{ parentId: leadId }]);
        expect(ended(events), id).toMatchObject([{ type: 'Completed' }]);
      }
      const first = workers.find(([, events]) => taskOf(events).startsWith('Worker 1'));
      const second = workers.find(([, events]) => taskOf(events).startsWith('Worker 2'));
      // The first ran once, in the killed process; the second was resumed once and finished.
      expect(first?.[1]).toEqual(killed.get(first?.[0] ?? ''));
      expect(second?.[1].filter((e) => e.type === 'Resumed')).toHaveLength(1);
      expect(server.counts['Worker 1']).toBe(1);
      expect(server.counts['Worker 2']).toBe(2);

      const lead = all.get(leadId) ?? [];
      expect(ended(lead)).toMatchObject([
        {
          type: 'Completed',
          result: { awaited: [`${first?.[0]}:completed`, `${second?.[0]}:completed`].sort() },
        },
      ]);
      expect(lead.filter((e) => e.type === 'ToolCall' && e.name === 'spawn_agent')).toHaveLength(2);
      const results = readFileSync(path.join(out, 'results.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { agentId: string; status: string });
      expect(results.filter((line) => line.agentId === leadId)).toMatchObject([{ status: 'completed' }]);
      expect(results.filter((line) => line.agentId === second?.[0])).toMatchObject([{ status: 'completed' }]);
    },
  );
});
