/**
 * Supervisor.replay on real worker threads: a recorded agent runs again on the same or a changed
 * version, its calls answered from its journal; a replayed orchestrator's subagents are replayed
 * from theirs. Side effects are counted by fixture tools (test/fixtures/replay/effect-tools.ts).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentDefinition } from '../../src/definition/types.ts';
import type { AuditEvent, EventOf } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import type { UsageRecord } from '../../src/loop/usage-record.ts';
import type { AgentToolCall } from '../../src/supervisor/events.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';
import { effects } from '../fixtures/replay/effect-tools.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { fixtures, tempDir } from './helpers.ts';

const replayFixtures = path.join(fixtures, '../replay');

const writer = (body = 'You follow your plan.'): AgentDefinition =>
  makeDefinition({
    name: 'writer',
    body,
    tools: ['look', 'write_note', 'wait_for_instruction', 'complete_task'],
    completionRequirement: {
      tool: 'complete_task',
      reminder: 'Call complete_task.',
      recovery: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 },
    },
  });

const boss = makeDefinition({
  name: 'boss',
  body: 'You orchestrate.',
  tools: ['spawn_agent', 'send_instruction', 'await_agents', 'complete_task'],
});

const cwd = tempDir('troupe-replay-');
let sup: Supervisor;
const usage: UsageRecord[] = [];

beforeAll(() => {
  sup = new Supervisor({
    threads: 1,
    providers: { plan: { kind: 'module', module: path.join(replayFixtures, 'plan-provider.ts') } },
    toolModules: [{ module: path.join(replayFixtures, 'effect-tools.ts'), export: 'effectTools' }],
    journalDir: path.join(cwd, 'journals'),
    cwd,
    definitions: [writer(), boss],
    compat: false,
    usageSink: (record) => void usage.push(record),
  });
});

afterAll(() => sup.close());

/** The executions of the agents whose ids start with `prefix`. */
function effectsOf(prefix: string): string[] {
  return effects(cwd).filter((line) => line.startsWith(prefix));
}

function journalOf(agentId: string): AuditEvent[] {
  return readJournal(path.join(cwd, 'journals', `${agentId}.jsonl`)).events;
}

function ofType<T extends AuditEvent['type']>(events: readonly AuditEvent[], type: T): EventOf<T>[] {
  return events.filter((event): event is EventOf<T> => event.type === type);
}

const plan = (...lines: string[]) => lines.map((line) => `do: ${line}`).join('\n');

describe('Supervisor.replay', () => {
  const journal = (agentId: string) => path.join(cwd, 'journals', `${agentId}.jsonl`);

  it('replays a recorded agent on the same version: the same outcome, and no tool runs', async () => {
    const original = await sup.spawn('writer', {
      id: 'a-rec',
      task: plan('look {"value":"x"}', 'look {"value":"x"}', 'write_note {"value":"n1"}'),
    }).result;
    expect(original.status).toBe('completed');
    expect(effectsOf('a-')).toHaveLength(3);

    const outcome = await sup.replay(journal('a-rec'), { id: 'a-rep' }).result;
    expect(effectsOf('a-')).toHaveLength(3);
    expect(outcome).toMatchObject({ status: 'completed' });
    expect(outcome.status === 'completed' && outcome.result).toEqual(
      original.status === 'completed' && original.result,
    );
    const events = journalOf('a-rep');
    expect(ofType(events, 'Started')[0]?.replay).toEqual({ of: journal('a-rec'), agentId: 'a-rec' });
    expect(ofType(events, 'ToolResult').map((result) => [result.name, result.replay])).toEqual([
      ['look', 'recorded'],
      ['look', 'recorded'],
      ['write_note', 'recorded'],
      ['complete_task', undefined],
    ]);
  });

  it('replays on a changed prompt: a new write call is refused, a new read-only call runs live', async () => {
    await sup.spawn('writer', { id: 'b-rec', task: plan('write_note {"value":"n1"}') }).result;
    expect(effectsOf('b-')).toEqual(['b-rec write_note {"value":"n1"}']);

    const v2 = writer(`You follow your plan.\n${plan('write_note {"value":"v2"}', 'look {"value":"new"}')}`);
    const outcome = await sup.replay(journal('b-rec'), { id: 'b-rep', agent: v2 }).result;
    expect(outcome.status).toBe('completed');
    expect(effectsOf('b-')).toEqual(['b-rec write_note {"value":"n1"}', 'b-rep look {"value":"new"}']);
    const results = ofType(journalOf('b-rep'), 'ToolResult');
    expect(results.map((result) => [result.name, result.ok, result.replay])).toEqual([
      ['write_note', true, 'recorded'],
      ['write_note', false, 'refused'],
      ['look', true, 'live'],
      ['complete_task', true, undefined],
    ]);
    expect(results[1]?.text).toContain('was not run: this is a replay');
  });

  it('sends a replayed agent the instructions it received, in order', async () => {
    const recorded = sup.spawn('writer', {
      id: 'c-rec',
      task: plan('wait_for_instruction {}', 'wait_for_instruction {}', 'write_note {"value":"after"}'),
    });
    recorded.send('first');
    recorded.send('second');
    const original = await recorded.result;
    const outcome = await sup.replay(journal('c-rec'), { id: 'c-rep' }).result;
    expect(outcome.status === 'completed' && outcome.result).toEqual(
      original.status === 'completed' && original.result,
    );
    expect(ofType(journalOf('c-rep'), 'Instructed').map((event) => event.text)).toEqual(['first', 'second']);
    expect(effectsOf('c-')).toHaveLength(1);
  });

  it('replays an orchestrator: its subagents are replayed from their own journals, and nothing runs', async () => {
    const childTask = plan('wait_for_instruction {}', 'write_note {"value":"c1"}', 'look {"value":"c"}');
    const bossTask = plan(
      `spawn_agent ${JSON.stringify({ agent: 'writer', task: childTask })}`,
      'send_instruction {"agentId":"$1","text":"go"}',
      'await_agents {}',
    );
    const spawned: { agentId: string; parentId: string | undefined }[] = [];
    sup.on('agent:spawned', (event) => spawned.push({ agentId: event.agentId, parentId: event.parentId }));
    const original = await sup.spawn('boss', { id: 'd-rec', task: bossTask }).result;
    expect(original.status).toBe('completed');
    const before = effects(cwd).length;

    const outcome = await sup.replay(journal('d-rec'), { id: 'd-rep' }).result;
    expect(effects(cwd)).toHaveLength(before);
    expect(outcome.status === 'completed' && outcome.result).toEqual(
      original.status === 'completed' && original.result,
    );
    const recordedChild = spawned.find((event) => event.parentId === 'd-rec')?.agentId;
    const child = spawned.find((event) => event.parentId === 'd-rep')?.agentId ?? '';
    const childEvents = journalOf(child);
    expect(ofType(childEvents, 'Started')[0]?.replay).toEqual({
      of: journal('d-rec'),
      agentId: recordedChild,
    });
    expect(ofType(childEvents, 'ToolResult').map((result) => [result.name, result.replay])).toEqual([
      ['wait_for_instruction', undefined],
      ['write_note', 'recorded'],
      ['look', 'recorded'],
      ['complete_task', undefined],
    ]);
    // The subagent got its instruction from the replayed orchestrator, not from its recording.
    expect(ofType(childEvents, 'Instructed').map((event) => event.text)).toEqual(['go']);
  });

  it('fails a replay whose journal cannot be read as invalid_request, without running it', async () => {
    const outcome = await sup.spawn('writer', {
      task: 'x',
      replay: { journal: path.join(cwd, 'missing.jsonl') },
    }).result;
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'journal_not_found' },
    });
  });

  it("tags the usage sink's records of a replay, one per model request, and reports tool calls in two phases", async () => {
    await sup.spawn('writer', { id: 'e-rec', task: plan('write_note {"value":"e"}') }).result;
    const tools: AgentToolCall[] = [];
    sup.on('agent:tool', (event) => {
      if (event.agentId === 'e-rep') tools.push(event);
    });
    await sup.replay(journal('e-rec'), { id: 'e-rep' }).result;
    for (const [agentId, tag] of [
      ['e-rec', null],
      ['e-rep', { of: journal('e-rec'), agentId: 'e-rec' }],
    ] as const) {
      const events = journalOf(agentId);
      const records = usage.filter((record) => record.agentId === agentId);
      expect(records.map((record) => record.step)).toEqual(
        ofType(events, 'ProviderReceipt').map((receipt) => receipt.step),
      );
      for (const record of records) {
        expect(record).toMatchObject({
          definition: { name: 'writer', hash: ofType(events, 'Started')[0]?.definition.hash },
          blocks: [],
          provider: 'plan',
          replay: tag,
        });
      }
    }
    expect(tools.map((event) => [event.tool, event.phase, event.ok, event.replay])).toEqual([
      ['write_note', 'started', undefined, undefined],
      ['write_note', 'completed', true, 'recorded'],
      ['complete_task', 'started', undefined, undefined],
      ['complete_task', 'completed', true, undefined],
    ]);
    expect(tools[0]?.args).toEqual({ value: 'e' });
    expect(tools[1]?.output).toMatch(/^wrote e \(write #\d+\)$/);
    expect(tools[1]?.durationMs).toBeGreaterThanOrEqual(0);
  });
});
