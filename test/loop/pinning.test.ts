// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${{ }}` is troupe's template syntax, not a mistaken JS placeholder.
/**
 * Model settings and blocks in the loop: they reach the requests, the prompt and the tools, are
 * recorded in the Started event, and a resumed agent runs exactly what it started with.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { fileBlockStore } from '../../src/blocks/file-store.ts';
import { memoryBlockStore } from '../../src/blocks/memory-store.ts';
import { definitionHash, parseDefinition } from '../../src/definition/load.ts';
import type { AgentDefinition } from '../../src/definition/types.ts';
import type { AuditEvent, EventOf } from '../../src/journal/events.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { verifyJournal } from '../../src/journal/verify.ts';
import { pinnedDefinition } from '../../src/loop/pinning.ts';
import { journalRerender } from '../../src/loop/rerender.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import type { ModelSettingIssue } from '../../src/providers/model-settings.ts';
import { ScriptedProvider, type ScriptedStep } from '../../src/providers/scripted.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import type { Tool } from '../../src/tools/types.ts';
import { TempTree } from '../definition/helpers.ts';
import { eventsOf, tempDir } from './helpers.ts';

let tree: TempTree | undefined;
afterEach(() => tree?.remove());

function parse(text: string, path = '/project/.troupe/agents/triage.md'): AgentDefinition {
  const result = parseDefinition(text, path);
  if (!result.definition) throw new Error(JSON.stringify(result.errors));
  return result.definition;
}

const TRIAGE = `---
name: triage
description: Triages tickets.
tools: [score]
instructions: { prompt: acme.intake, version: ^1, parameters: { queue: billing } }
settings: [{ id: acme.weights, version: ^1 }]
modelSettings: { id: acme.fast, version: ^1, temperature: 0.3 }
---
`;

/** A tool that reports the urgency weight its settings give it. */
function scoreTool(seen: unknown[]): Tool {
  return {
    name: 'score',
    description: 'Scores a ticket.',
    parameters: { type: 'object', properties: {} },
    readOnly: true,
    execute: (_args, ctx) => {
      const urgency = ctx.settings?.['acme.weights']?.urgency;
      seen.push(urgency);
      return { ok: true, text: `urgency weight ${String(urgency)}` };
    },
  };
}

async function run(options: {
  definition: AgentDefinition;
  steps: readonly ScriptedStep[];
  blocks: ReturnType<typeof fileBlockStore>;
  seen: unknown[];
  resumeFrom?: readonly AuditEvent[];
  extra?: Partial<Parameters<typeof runAgent>[0]>;
}) {
  const provider = new ScriptedProvider(options.steps);
  const journal = new MemoryJournal(options.resumeFrom ? { events: options.resumeFrom } : {});
  const outcome = await runAgent({
    agentId: 'triage-1',
    definition: options.definition,
    task: 'Triage ticket 7.',
    provider,
    model: 'test-model',
    registry: createToolRegistry([scoreTool(options.seen)]),
    cwd: tree?.path('project') ?? tempDir(),
    journal,
    blocks: options.blocks,
    ...(options.resumeFrom ? { resumeFrom: options.resumeFrom } : {}),
    ...options.extra,
  });
  provider.assertAllUsed();
  return { outcome, events: journal.events, requests: provider.requests };
}

function publish(version: string, urgency: number, temperature: number, words: string): void {
  tree?.write(
    `project/.troupe/blocks/acme.intake/${version}.md`,
    `---\nparameters: [queue]\n---\n${words} for \${{ queue }}; urgency \${{ settings.acme.weights.urgency }}.\n`,
  );
  tree?.write(`project/.troupe/blocks/acme.weights/${version}.yaml`, `urgency: ${urgency}\n`);
  tree?.write(
    `project/.troupe/blocks/acme.fast/${version}.yaml`,
    `temperature: ${temperature}\nmaxOutputTokens: 500\nseed: 11\n`,
  );
}

describe('blocks and model settings in a run', () => {
  it('settings reach the prompt and the tool; model settings every request and the Started event', async () => {
    tree = new TempTree();
    tree.mkdir('project/.git');
    publish('1.0.0', 0.4, 0.9, 'Triage tickets');
    publish('1.2.0', 0.6, 0.8, 'Triage tickets carefully');
    publish('2.0.0', 0.99, 0.1, 'Version two');
    const seen: unknown[] = [];
    const { outcome, events, requests } = await run({
      definition: parse(TRIAGE),
      steps: [{ toolCalls: [{ name: 'score' }] }, { text: 'Ticket 7 is urgent.' }],
      blocks: fileBlockStore({ cwd: tree.path('project'), home: tree.path('home') }),
      seen,
    });
    expect(outcome.status).toBe('completed');
    expect(seen).toEqual([0.6]);
    expect(requests[0]?.system).toContain('Triage tickets carefully for billing; urgency 0.6.');
    // The block's settings, with the definition's own temperature over the block's 0.8.
    for (const request of requests) {
      expect(request.settings).toEqual({ temperature: 0.3, maxOutputTokens: 500, seed: 11 });
    }
    const [started] = eventsOf(events, 'Started');
    expect(started?.modelSettings).toEqual({ temperature: 0.3, maxOutputTokens: 500, seed: 11 });
    expect(started?.settings).toEqual({ 'acme.weights': { urgency: 0.6 } });
    expect(started?.blocks?.map(({ kind, id, range, version }) => ({ kind, id, range, version }))).toEqual([
      { kind: 'prompt', id: 'acme.intake', range: '^1', version: '1.2.0' },
      { kind: 'settings', id: 'acme.weights', range: '^1', version: '1.2.0' },
      { kind: 'modelSettings', id: 'acme.fast', range: '^1', version: '1.2.0' },
    ]);
    expect(started?.blocks?.every((block) => /^[0-9a-f]{64}$/.test(block.hash))).toBe(true);
    expect(started?.definition).toMatchObject({ name: 'triage', source: 'project', text: TRIAGE });
    expect(verifyJournal(events, { rerender: journalRerender() })).toMatchObject({
      ok: true,
      checkedInferences: 2,
    });
  });

  it('a journalled request hash covers the model settings: a changed setting fails verification', async () => {
    tree = new TempTree();
    publish('1.0.0', 0.4, 0.9, 'Triage');
    const { events } = await run({
      definition: parse(TRIAGE),
      steps: [{ text: 'Done.' }],
      blocks: fileBlockStore({ cwd: tree.path('project'), home: tree.path('home') }),
      seen: [],
    });
    const started = events[0];
    if (started?.type !== 'Started') throw new Error('expected Started');
    // Re-render the journal as if the Started event recorded another temperature.
    const rerender = journalRerender();
    const tampered = [
      { ...started, modelSettings: { ...started.modelSettings, temperature: 0.31 } },
      ...events.slice(1),
    ];
    const result = verifyJournal(tampered as AuditEvent[], {
      rerender: (_events, index) => rerender(tampered as AuditEvent[], index),
    });
    expect(result.ok).toBe(false);
    expect(result.firstBad?.reason).toBe('bad_hash');
    const renderedOnly = journalRerender();
    expect(
      verifyJournal(events, {
        rerender: (all, index) => ({ ...renderedOnly(all, index), modelSettings: { temperature: 0.31 } }),
      }).firstBad?.reason,
    ).toBe('input_mismatch');
  });

  it('a resumed agent runs the recorded definition, blocks and settings, not those published or edited since', async () => {
    tree = new TempTree();
    publish('1.0.0', 0.4, 0.9, 'Triage tickets');
    const blocks = fileBlockStore({ cwd: tree.path('project'), home: tree.path('home') });
    const seen: unknown[] = [];
    const original = await run({
      definition: parse(TRIAGE),
      steps: [{ toolCalls: [{ name: 'score' }] }, { toolCalls: [{ name: 'score' }] }, { text: 'Done.' }],
      blocks,
      seen,
    });
    expect(original.outcome.status).toBe('completed');
    // A crash right after the first tool result reached the history.
    const cut = original.events.findIndex((event) => event.type === 'ToolResult') + 1;
    expect(cut).toBeGreaterThan(1);
    const prefix = original.events.slice(0, cut);

    publish('1.5.0', 0.95, 0.0, 'Something else entirely');
    const edited = parse(
      TRIAGE.replace('temperature: 0.3', 'temperature: 0.7').replace(
        'tools: [score]',
        'tools: [score, read_file]',
      ),
    );
    expect(definitionHash(edited)).not.toBe(
      original.events[0]?.type === 'Started' && original.events[0].definition.hash,
    );
    const resumedSeen: unknown[] = [];
    const resumed = await run({
      definition: edited,
      steps: [{ toolCalls: [{ name: 'score' }] }, { text: 'Done.' }],
      blocks,
      seen: resumedSeen,
      resumeFrom: prefix,
    });
    expect(resumed.outcome.status).toBe('completed');
    expect(resumedSeen).toEqual([0.4]);
    const first = original.requests[0];
    for (const request of resumed.requests) {
      expect(request.system).toBe(first?.system);
      expect(request.tools).toEqual(first?.tools);
      expect(request.settings).toEqual({ temperature: 0.3, maxOutputTokens: 500, seed: 11 });
    }
    const [resumedEvent] = eventsOf(resumed.events, 'Resumed');
    expect(resumedEvent?.definitionChanged).toEqual({ hash: definitionHash(edited), path: edited.path });
    expect(verifyJournal(resumed.events, { rerender: journalRerender() })).toMatchObject({
      ok: true,
      checkedInferences: 3,
    });
  });

  it('a definition derived in code from a loaded one is recorded and resumed as derived, not as its text', async () => {
    tree = new TempTree();
    publish('1.0.0', 0.4, 0.9, 'Triage tickets');
    const blocks = fileBlockStore({ cwd: tree.path('project'), home: tree.path('home') });
    const loaded = parse(TRIAGE.replace('tools: [score]', 'tools: [score, read_file]'));
    // As an orchestrator is made from `worker`: its `text` still reads as the loaded file.
    const derived: AgentDefinition = { ...loaded, name: 'derived', tools: ['score'] };
    const original = await run({
      definition: derived,
      steps: [{ toolCalls: [{ name: 'score' }] }, { toolCalls: [{ name: 'score' }] }, { text: 'Done.' }],
      blocks,
      seen: [],
    });
    expect(original.outcome.status).toBe('completed');
    const started = original.events[0];
    if (started?.type !== 'Started') throw new Error('no Started event');
    expect(started.definition).toMatchObject({ name: 'derived', hash: definitionHash(derived) });
    expect(started.definition.text).toBeUndefined();
    const cut = original.events.findIndex((event) => event.type === 'ToolResult') + 1;
    // Resumed as `troupe resume` does in a new process: given the loaded definition of the name.
    const resumed = await run({
      definition: loaded,
      steps: [{ toolCalls: [{ name: 'score' }] }, { text: 'Done.' }],
      blocks,
      seen: [],
      resumeFrom: original.events.slice(0, cut),
    });
    expect(resumed.outcome.status).toBe('completed');
    const first = original.requests[0];
    expect(first?.tools.map((tool) => tool.name)).toEqual(['score']);
    for (const request of resumed.requests) {
      expect(request.system).toBe(first?.system);
      expect(request.tools).toEqual(first?.tools);
    }
    expect(eventsOf(resumed.events, 'Resumed')[0]?.notices).toBeUndefined();
    expect(verifyJournal(resumed.events, { rerender: journalRerender() })).toMatchObject({ ok: true });
  });

  it('a journal that recorded a changed copy by its stale text says so on resume', async () => {
    const loaded = parse(TRIAGE);
    const derived: AgentDefinition = { ...loaded, name: 'derived', tools: [] };
    // What troupe wrote before it recorded such definitions by content: the text, the copy's hash.
    const started = {
      type: 'Started',
      agentId: 'old-1',
      definition: { name: 'derived', hash: definitionHash(derived), path: loaded.path, text: loaded.text },
    } as unknown as EventOf<'Started'>;
    const pinned = await pinnedDefinition(started, derived);
    expect(pinned.definition.name).toBe('triage');
    expect(pinned.notices.join('\n')).toContain('spawned with a copy changed in code');
  });

  it('a loaded definition unchanged is recorded by its text', async () => {
    tree = new TempTree();
    publish('1.0.0', 0.4, 0.9, 'Triage tickets');
    const blocks = fileBlockStore({ cwd: tree.path('project'), home: tree.path('home') });
    const { events } = await run({
      definition: { ...parse(TRIAGE) },
      steps: [{ text: 'Done.' }],
      blocks,
      seen: [],
    });
    const started = events[0];
    expect(started?.type === 'Started' && started.definition.text).toBe(TRIAGE);
  });

  it('a resumed agent needs no block store: the recorded values are enough', async () => {
    tree = new TempTree();
    publish('1.0.0', 0.4, 0.9, 'Triage');
    const blocks = fileBlockStore({ cwd: tree.path('project'), home: tree.path('home') });
    const original = await run({
      definition: parse(TRIAGE),
      steps: [{ toolCalls: [{ name: 'score' }] }, { text: 'Done.' }],
      blocks,
      seen: [],
    });
    const prefix = original.events.slice(0, 1);
    rmSync(tree.path('project/.troupe/blocks'), { recursive: true });
    const seen: unknown[] = [];
    const resumed = await run({
      definition: parse(TRIAGE),
      steps: [{ toolCalls: [{ name: 'score' }] }, { text: 'Done.' }],
      blocks,
      seen,
      resumeFrom: prefix,
    });
    expect(resumed.outcome.status).toBe('completed');
    expect(seen).toEqual([0.4]);
  });
});

describe('what cannot run fails the agent before any request', () => {
  it('a block that cannot be resolved: Failed invalid_request, block_unresolvable, located', async () => {
    const provider = new ScriptedProvider([]);
    const journal = new MemoryJournal();
    const outcome = await runAgent({
      agentId: 'a',
      definition: parse(TRIAGE),
      task: 'x',
      provider,
      model: 'm',
      cwd: tempDir(),
      journal,
      blocks: memoryBlockStore([]),
    });
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'block_unresolvable' },
    });
    expect(outcome.status === 'failed' && outcome.error.message).toContain(
      '/project/.troupe/agents/triage.md:5:25:',
    );
    expect(journal.events.map((event) => event.type)).toEqual(['Failed']);
    expect(provider.requests).toHaveLength(0);
  });

  it('a setting the provider cannot send: Failed invalid_request, unsupported_setting', async () => {
    const provider = new ScriptedProvider([]);
    const checking = Object.assign(Object.create(provider) as ScriptedProvider, {
      checkModelSettings: (): ModelSettingIssue[] => [
        { setting: 'topK', kind: 'unsupported', message: 'no top_k here' },
      ],
    });
    const outcome = await runAgent({
      agentId: 'a',
      definition: parse('---\nname: a\ndescription: A.\nmodelSettings: { topK: 3 }\n---\nBody.\n'),
      task: 'x',
      provider: checking,
      model: 'm',
      cwd: tempDir(),
      systemPrompt: 'S',
    });
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'unsupported_setting', message: 'no top_k here', fields: { setting: 'topK' } },
    });
  });
});

describe('precedence: spawn > plan > definition > supervisor default', () => {
  const definition = parse(
    '---\nname: a\ndescription: A.\nmodelSettings: { temperature: 0.5, topP: 0.5 }\n---\nBody.\n',
  );

  async function settingsFor(extra: Parameters<typeof runAgent>[0] extends infer O ? Partial<O> : never) {
    const provider = new ScriptedProvider([{ text: 'ok' }]);
    await runAgent({
      agentId: 'a',
      definition,
      task: 'x',
      provider,
      model: 'm',
      cwd: tempDir(),
      systemPrompt: 'S',
      ...extra,
    });
    return provider.requests[0]?.settings;
  }

  it('the definition wins over the defaults, key by key', async () => {
    expect(await settingsFor({ defaultModelSettings: { temperature: 1, maxOutputTokens: 77 } })).toEqual({
      temperature: 0.5,
      topP: 0.5,
      maxOutputTokens: 77,
    });
  });

  it('the spawn (with the plan merged under it) wins over the definition, key by key', async () => {
    expect(
      await settingsFor({
        defaultModelSettings: { temperature: 1, maxOutputTokens: 77 },
        modelSettings: { temperature: 0, reasoningEffort: 'low' },
      }),
    ).toEqual({ temperature: 0, topP: 0.5, maxOutputTokens: 77, reasoningEffort: 'low' });
  });

  it('bad settings given in code fail the agent with invalid_option', async () => {
    const provider = new ScriptedProvider([]);
    const outcome = await runAgent({
      agentId: 'a',
      definition,
      task: 'x',
      provider,
      model: 'm',
      cwd: tempDir(),
      systemPrompt: 'S',
      modelSettings: { temperature: -1 },
    });
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'invalid_option' },
    });
  });
});
