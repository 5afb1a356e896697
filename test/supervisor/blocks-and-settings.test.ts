/**
 * Blocks and model settings under the Supervisor: resolved where the spawn happens (any store),
 * layered supervisor < definition < spawn, and pinned across a thread crash: an agent restarted in
 * a new thread runs the versions it started with, not ones published while it ran.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryBlockStore } from '../../src/blocks/memory-store.ts';
import { parseDefinition } from '../../src/definition/load.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import { verifyJournal } from '../../src/journal/verify.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { TempTree } from '../definition/helpers.ts';
import { fixtures, tempDir } from './helpers.ts';

let supervisor: Supervisor | undefined;
let tree: TempTree | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
  tree?.remove();
});

function definition(frontmatter: string, body = 'You triage tickets.'): AgentDefinition {
  const parsed = parseDefinition(
    `---\nname: triage\ndescription: Triages.\n${frontmatter}\n---\n${body}\n`,
    '/defs/triage.md',
  );
  if (!parsed.definition) throw new Error(JSON.stringify(parsed.errors));
  return parsed.definition;
}

describe('blocks and model settings under the Supervisor', () => {
  it('a thread crash restarts the agent with the blocks it started with, not ones published meanwhile', async () => {
    tree = new TempTree();
    const cwd = tree.path('project');
    tree.write('project/.troupe/blocks/acme.weights/1.0.0.yaml', 'urgency: 0.4\n');
    tree.write('project/.troupe/blocks/acme.fast/1.0.0.yaml', 'temperature: 0.3\ntopP: 0.8\n');
    const log = tree.path('requests.log');
    supervisor = new Supervisor({
      threads: 1,
      cwd,
      providers: {
        probe: { kind: 'module', module: path.join(fixtures, 'settings-probe.ts'), options: { log } },
      },
      toolModules: [{ module: path.join(fixtures, 'settings-probe.ts'), export: 'settingsTools' }],
      definitions: [
        definition(
          [
            'tools: [publish_and_crash, probe, complete_task]',
            'settings: [{ id: acme.weights, version: ^1 }]',
            'modelSettings: { id: acme.fast, version: ^1 }',
          ].join('\n'),
        ),
      ],
      restart: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 20 },
    });
    const restarted: string[] = [];
    supervisor.on('agent:restarted', (event) => restarted.push(event.agentId));
    const handle = supervisor.spawn('triage', { task: 'Triage ticket 7.', id: 'triage-1' });
    const outcome = await handle.result;
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'completed' });
    expect(restarted).toEqual(['triage-1']);
    expect(readFileSync(path.join(cwd, 'probe.log'), 'utf8').trim().split('\n')).toEqual([
      'triage-1 published',
      'triage-1 urgency 0.4',
    ]);
    const requests = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { temperature?: number; topP?: number; system: string });
    expect(requests.length).toBeGreaterThanOrEqual(3);
    for (const request of requests) expect(request).toMatchObject({ temperature: 0.3, topP: 0.8 });
    expect(new Set(requests.map((request) => request.system)).size).toBe(1);
    const events = await supervisor.journal('triage-1');
    const started = events[0];
    expect(
      started?.type === 'Started' && started.blocks?.map((block) => `${block.id}@${block.version}`),
    ).toEqual(['acme.weights@1.0.0', 'acme.fast@1.0.0']);
    expect(events.some((event) => event.type === 'Resumed')).toBe(true);
    expect(verifyJournal(events, { rerender: journalRerender() })).toMatchObject({ ok: true });
  });

  it('layers model settings supervisor < definition < spawn, and resolves a code-given store on the supervisor', async () => {
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      modelSettings: { temperature: 1, maxOutputTokens: 900, seed: 5 },
      blocks: memoryBlockStore([
        { kind: 'settings', id: 'acme.weights', version: '2.1.0', values: { urgency: 0.6 } },
      ]),
      definitions: [
        definition(
          'tools: []\nsettings: [{ id: acme.weights, version: ^2 }]\nmodelSettings: { temperature: 0.5, topP: 0.9 }',
        ),
      ],
    });
    const spawned = supervisor.spawn('triage', { task: 'Say hi.', id: 'a', modelSettings: { topP: 0.2 } });
    expect((await spawned.result).status).toBe('completed');
    const [started] = await supervisor.journal('a');
    expect(started?.type === 'Started' && started.modelSettings).toEqual({
      temperature: 0.5,
      topP: 0.2,
      maxOutputTokens: 900,
      seed: 5,
    });
    expect(started?.type === 'Started' && started.settings).toEqual({ 'acme.weights': { urgency: 0.6 } });
  });

  it("records a block file's unknown key (ignored) as a warning of the agent's Started event", async () => {
    tree = new TempTree();
    const cwd = tree.mkdir('project');
    const file = tree.write('project/.troupe/blocks/acme.careful/1.0.0.yaml', 'temperature: 0.3\ntop_k: 3\n');
    supervisor = new Supervisor({
      threads: 1,
      cwd,
      definitions: [definition('tools: []\nmodelSettings: { id: acme.careful, version: ^1 }')],
    });
    const warned = new Promise<readonly { code: string; file?: string }[]>((resolve) =>
      supervisor?.on('agent:warnings', (event) => resolve(event.warnings)),
    );
    expect((await supervisor.spawn('triage', { task: 'Say hi.', id: 'a' }).result).status).toBe('completed');
    const [started] = await supervisor.journal('a');
    const expected = {
      code: 'unknown_key',
      file,
      line: 2,
      column: 1,
      path: '/top_k',
      message: expect.stringContaining('`topK`'),
    };
    expect(started?.type === 'Started' && started.warnings).toEqual([expected]);
    expect(started?.type === 'Started' && started.modelSettings).toEqual({ temperature: 0.3 });
    expect(await warned).toEqual([expect.objectContaining(expected)]);
  });

  it('a spawn whose blocks cannot be resolved fails invalid_request with block_unresolvable', async () => {
    supervisor = new Supervisor({
      threads: 1,
      cwd: tempDir(),
      blocks: memoryBlockStore([]),
      definitions: [definition('settings: [{ id: acme.weights, version: ^2 }]')],
    });
    const outcome = await supervisor.spawn('triage', { task: 'x' }).result;
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'block_unresolvable', message: expect.stringContaining('/defs/triage.md:4:18:') },
    });
  });

  it('refuses bad model settings at the boundary: the option and the spawn', () => {
    expect(() => new Supervisor({ modelSettings: { temperature: 5 } })).toThrow(
      expect.objectContaining({ code: 'invalid_option' }),
    );
    supervisor = new Supervisor({ threads: 1, cwd: tempDir() });
    expect(() => supervisor?.spawn('worker', { task: 'x', modelSettings: { topP: 0 } })).toThrow(
      expect.objectContaining({ code: 'invalid_option' }),
    );
  });
});
