/**
 * A restarted agent runs the definition it was spawned with, even when that is an object derived
 * from a loaded one (`{ ...loaded, name, tools }`, whose `text` still holds the file it came from):
 * after its thread died, and when a new supervisor resumes it from its journal.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseDefinition } from '../../src/definition/load.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { TempTree } from '../definition/helpers.ts';
import { fixtures } from './helpers.ts';

let supervisor: Supervisor | undefined;
let tree: TempTree | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
  tree?.remove();
});

/** The loaded definition: it offers `read_file` too, and its prompt says "file". */
function loaded(): AgentDefinition {
  const parsed = parseDefinition(
    '---\nname: triage\ndescription: Triages.\ntools: [publish_and_crash, probe, complete_task, read_file]\n---\nYou triage tickets from the file.\n',
    '/defs/triage.md',
  );
  if (!parsed.definition) throw new Error(JSON.stringify(parsed.errors));
  return parsed.definition;
}

/** Derived in code, as an orchestrator is made from `worker`: another name, tools and prompt. */
function derived(): AgentDefinition {
  return {
    ...loaded(),
    name: 'derived-triage',
    tools: ['publish_and_crash', 'probe', 'complete_task'],
    body: 'You triage tickets as derived in code.',
  };
}

interface Request {
  readonly system: string;
  readonly tools: readonly string[];
}

function requests(log: string): Request[] {
  return readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Request);
}

function project(): string {
  tree = new TempTree();
  const cwd = tree.path('project');
  mkdirSync(cwd, { recursive: true });
  return cwd;
}

function probeSupervisor(cwd: string, log: string, journalDir: string, maxRetries = 2): Supervisor {
  return new Supervisor({
    threads: 1,
    cwd,
    journalDir,
    providers: {
      probe: { kind: 'module', module: path.join(fixtures, 'settings-probe.ts'), options: { log } },
    },
    toolModules: [{ module: path.join(fixtures, 'settings-probe.ts'), export: 'settingsTools' }],
    restart: { maxRetries, baseDelayMs: 10, maxDelayMs: 20 },
  });
}

describe('the definition a restarted agent runs', () => {
  it('after its thread died: the same tools and system prompt as its first request', async () => {
    const cwd = project();
    const log = tree?.path('requests.log') ?? '';
    supervisor = probeSupervisor(cwd, log, tree?.path('journals') ?? '');
    const restarted: string[] = [];
    supervisor.on('agent:restarted', (event) => restarted.push(event.agentId));
    const handle = supervisor.spawn(derived(), { task: 'Triage ticket 7.', id: 'derived-1' });
    const outcome = await handle.result;
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'completed' });
    expect(restarted).toEqual(['derived-1']);
    const seen = requests(log);
    // publish_and_crash (the thread dies), then after the restart probe and complete_task.
    expect(seen.length).toBeGreaterThanOrEqual(3);
    const first = seen[0];
    expect(first?.system).toContain('as derived in code');
    expect([...(first?.tools ?? [])].sort()).toEqual(['complete_task', 'probe', 'publish_and_crash']);
    // Without the fix the restarted agent was offered read_file and told "from the file".
    for (const request of seen.slice(1)) expect(request).toEqual(first);
    const started = (await supervisor.journal('derived-1'))[0];
    expect(started?.type === 'Started' && started.definition.name).toBe('derived-triage');
  });

  it('retried from its journal by a new supervisor: the same tools and system prompt', async () => {
    const cwd = project();
    const log = tree?.path('requests.log') ?? '';
    const journals = tree?.path('journals') ?? '';
    // Ended with its thread's death and no restart left (journalled Failed(crashed)): the journal
    // is all a retry has.
    supervisor = probeSupervisor(cwd, log, journals, 0);
    const first = await supervisor.spawn(derived(), { task: 'Triage ticket 8.', id: 'derived-2' }).result;
    expect(first).toMatchObject({ status: 'failed' });
    await supervisor.close();
    // The new supervisor is given the loaded definition: the journal decides what runs.
    supervisor = probeSupervisor(cwd, log, journals);
    const outcome = await supervisor.spawn(loaded(), {
      task: 'Triage ticket 8.',
      id: 'derived-2-r2',
      retryOf: 'derived-2',
    }).result;
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'completed' });
    const seen = requests(log);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen[0]?.system).toContain('as derived in code');
    for (const request of seen.slice(1)) expect(request).toEqual(seen[0]);
  });
});
