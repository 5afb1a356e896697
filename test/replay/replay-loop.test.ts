/**
 * Replay in the loop: a recorded agent runs again, its tool calls answered from the recording by
 * the one rule of src/replay/replay-calls.ts. Side effects are counted by fixture tools, so a test
 * sees exactly which calls really ran.
 */
import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../src/journal/events.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import type { UsageRecord } from '../../src/loop/usage-record.ts';
import type { ScriptedStep } from '../../src/providers/scripted.ts';
import { recordingOf } from '../../src/replay/recording.ts';
import { replayRefusal } from '../../src/replay/replay-calls.ts';
import { eventsOf, recordingTool, runScripted } from '../loop/helpers.ts';

/** A write tool whose every execution is a side effect, and a read tool; both count their runs. */
function fixtureTools() {
  let writes = 0;
  let reads = 0;
  const write = recordingTool(
    'write_note',
    (args) => {
      writes += 1;
      return { ok: true, text: `wrote ${String(args.value)} (write #${writes})` };
    },
    false,
  );
  const read = recordingTool('look', (args) => {
    reads += 1;
    return { ok: true, text: `saw ${String(args.value)} (read #${reads})` };
  });
  return { tools: [write.tool, read.tool], writes: () => writes, reads: () => reads };
}

const complete = (result: unknown): ScriptedStep => ({
  toolCalls: [{ name: 'complete_task', arguments: { result } }],
});

/** The recorded run: look twice at the same thing (different answers), write once, complete. */
const recordedSteps: ScriptedStep[] = [
  { toolCalls: [{ name: 'look', arguments: { value: 'x' } }] },
  { toolCalls: [{ name: 'look', arguments: { value: 'x' } }] },
  { toolCalls: [{ name: 'write_note', arguments: { value: 'n1' } }] },
  complete({ done: true }),
];

async function record() {
  const fixture = fixtureTools();
  const run = await runScripted(recordedSteps, { tools: fixture.tools });
  expect(run.outcome.status).toBe('completed');
  expect([fixture.writes(), fixture.reads()]).toEqual([1, 2]);
  return { events: run.events, recording: await recordingOf(run.events, 'recorded.jsonl') };
}

function toolResults(events: readonly AuditEvent[]) {
  return eventsOf(events, 'ToolResult').map((result) => [result.name, result.text, result.replay]);
}

describe('replaying a recorded agent in the loop', () => {
  it('with the same version reproduces every outcome and runs no tool: every call is answered from the recording', async () => {
    const { events, recording } = await record();
    const fixture = fixtureTools();
    const replay = await runScripted(recordedSteps, { tools: fixture.tools, run: { replay: recording } });
    expect([fixture.writes(), fixture.reads()]).toEqual([0, 0]);
    expect(replay.outcome).toMatchObject({ status: 'completed', result: { done: true } });
    expect(toolResults(replay.events)).toEqual(
      toolResults(events).map(([name, text]) => [
        name,
        text,
        name === 'complete_task' ? undefined : 'recorded',
      ]),
    );
    // The model saw exactly what it saw when recorded: the inputs hash the same.
    const hashes = (list: readonly AuditEvent[]) =>
      eventsOf(list, 'InferenceSubmitted').map((e) => e.inputHash);
    expect(hashes(replay.events)).toEqual(hashes(events));
    expect(eventsOf(replay.events, 'Started')[0]?.replay).toEqual({
      of: 'recorded.jsonl',
      agentId: 'agent-1',
    });
  });

  it('gives the k-th identical call the k-th recorded result', async () => {
    const { recording } = await record();
    const fixture = fixtureTools();
    const replay = await runScripted(recordedSteps, { tools: fixture.tools, run: { replay: recording } });
    const looks = eventsOf(replay.events, 'ToolResult').filter((result) => result.name === 'look');
    expect(looks.map((result) => result.text)).toEqual(['saw x (read #1)', 'saw x (read #2)']);
  });

  it('refuses a new call of a tool that is not read-only, and runs a new read-only call live', async () => {
    const { recording } = await record();
    const fixture = fixtureTools();
    const changed: ScriptedStep[] = [
      { toolCalls: [{ name: 'look', arguments: { value: 'x' } }] },
      // A third identical look: the recording has two, so this one runs live (read-only).
      { toolCalls: [{ name: 'look', arguments: { value: 'x' } }] },
      { toolCalls: [{ name: 'look', arguments: { value: 'x' } }] },
      // Different arguments: a new call of a write tool, refused.
      { toolCalls: [{ name: 'write_note', arguments: { value: 'n2' } }] },
      complete({ done: 'changed' }),
    ];
    const replay = await runScripted(changed, { tools: fixture.tools, run: { replay: recording } });
    expect([fixture.writes(), fixture.reads()]).toEqual([0, 1]);
    expect(toolResults(replay.events)).toEqual([
      ['look', 'saw x (read #1)', 'recorded'],
      ['look', 'saw x (read #2)', 'recorded'],
      ['look', 'saw x (read #1)', 'live'],
      ['write_note', replayRefusal('write_note'), 'refused'],
      ['complete_task', 'Task complete: your result was delivered.', undefined],
    ]);
    expect(eventsOf(replay.events, 'ToolResult').find((r) => r.replay === 'refused')?.ok).toBe(false);
    expect(replay.outcome).toMatchObject({ status: 'completed', result: { done: 'changed' } });
  });

  it('matches arguments by canonical JSON: key order does not matter, a changed value does', async () => {
    const fixture = fixtureTools();
    const original = await runScripted(
      [
        { toolCalls: [{ name: 'write_note', arguments: { value: 'a', extra: { b: 1, c: 2 } } }] },
        complete({ n: 1 }),
      ],
      { tools: fixture.tools },
    );
    const recording = await recordingOf(original.events, 'r');
    const replay = await runScripted(
      [
        { toolCalls: [{ name: 'write_note', arguments: { extra: { c: 2, b: 1 }, value: 'a' } }] },
        { toolCalls: [{ name: 'write_note', arguments: { extra: { c: 2, b: 1 }, value: 'b' } }] },
        complete({ n: 1 }),
      ],
      { tools: fixture.tools, run: { replay: recording } },
    );
    expect(fixture.writes()).toBe(1);
    expect(eventsOf(replay.events, 'ToolResult').map((r) => r.replay)).toEqual([
      'recorded',
      'refused',
      undefined,
    ]);
  });

  it("still applies the new version's policy: a recorded call of a tool it no longer has is not answered", async () => {
    const { recording } = await record();
    const fixture = fixtureTools();
    const replay = await runScripted(recordedSteps, {
      tools: fixture.tools,
      definition: { tools: ['look', 'complete_task'] },
      run: { replay: recording },
    });
    const write = eventsOf(replay.events, 'ToolResult').find((r) => r.name === 'write_note');
    expect(write).toMatchObject({ ok: false });
    expect(write?.replay).toBeUndefined();
    expect(write?.text).toContain('is not available');
  });

  it('resumes a replay cut off half way: the state is rebuilt from its journal, nothing runs', async () => {
    const { recording } = await record();
    const fixture = fixtureTools();
    const full = await runScripted(recordedSteps, { tools: fixture.tools, run: { replay: recording } });
    // Cut after the first look's result: the second identical look must get the second result.
    const cut = full.events.findIndex((e) => e.type === 'ToolResult');
    const prefix = full.events.slice(0, cut + 1);
    const journal = new MemoryJournal({ events: prefix });
    const resumed = await runScripted(recordedSteps.slice(1), {
      tools: fixture.tools,
      run: { replay: recording, resumeFrom: prefix, journal },
    });
    expect([fixture.writes(), fixture.reads()]).toEqual([0, 0]);
    expect(resumed.outcome).toMatchObject({ status: 'completed', result: { done: true } });
    expect(toolResults(journal.events)).toEqual(toolResults(full.events));
  });

  it('refuses to resume a replay without its recording, and a plain journal as a replay', async () => {
    const { recording } = await record();
    const fixture = fixtureTools();
    const full = await runScripted(recordedSteps, { tools: fixture.tools, run: { replay: recording } });
    const prefix = full.events.slice(0, 3);
    const missing = await runScripted([], {
      tools: fixture.tools,
      run: { resumeFrom: prefix, journal: new MemoryJournal({ events: prefix }) },
    });
    expect(missing.outcome).toMatchObject({
      status: 'failed',
      reason: 'invalid_request',
      error: { code: 'replay_recording_missing' },
    });
    const plain = await record();
    const plainPrefix = plain.events.slice(0, 3);
    const mismatch = await runScripted([], {
      tools: fixture.tools,
      run: {
        replay: recording,
        resumeFrom: plainPrefix,
        journal: new MemoryJournal({ events: plainPrefix }),
      },
    });
    expect(mismatch.outcome).toMatchObject({ status: 'failed', error: { code: 'replay_mismatch' } });
  });

  it('gives the usage sink one record per model request, tagged with what the agent replays', async () => {
    const { recording } = await record();
    const fixture = fixtureTools();
    const records: UsageRecord[] = [];
    const replay = await runScripted(recordedSteps, {
      tools: fixture.tools,
      run: { replay: recording, usageSink: (usage) => void records.push(usage) },
    });
    const receipts = eventsOf(replay.events, 'ProviderReceipt');
    const started = eventsOf(replay.events, 'Started')[0];
    expect(records).toHaveLength(receipts.length);
    expect(records.map((usage) => usage.step)).toEqual(receipts.map((receipt) => receipt.step));
    for (const usage of records) {
      expect(usage).toMatchObject({
        agentId: 'agent-1',
        parentId: undefined,
        definition: { name: 'tester', hash: started?.definition.hash },
        blocks: [],
        provider: 'scripted',
        model: 'test-model',
        replay: { of: 'recorded.jsonl', agentId: 'agent-1' },
      });
      expect(Date.parse(usage.startedAt)).toBeLessThanOrEqual(Date.parse(usage.endedAt));
    }
    // Outside a replay the tag is null, and a sink that throws stops nothing.
    const plain = await runScripted(recordedSteps, {
      tools: fixtureTools().tools,
      run: {
        usageSink: (usage) => {
          expect(usage.replay).toBeNull();
          throw new Error('sink failure');
        },
      },
    });
    expect(plain.outcome.status).toBe('completed');
  });
});

describe('replaying across paramNameOverrides', () => {
  /** `value` renamed to `v` for the model, on both fixture tools. */
  const renamed = { look: { value: 'v' }, write_note: { value: 'v' } };
  /** The recorded steps as a model sees the tools with `renamed`: the same canonical calls. */
  const renamedSteps: ScriptedStep[] = [
    { toolCalls: [{ name: 'look', arguments: { v: 'x' } }] },
    { toolCalls: [{ name: 'look', arguments: { v: 'x' } }] },
    { toolCalls: [{ name: 'write_note', arguments: { v: 'n1' } }] },
    complete({ done: true }),
  ];
  /** A definition file's text renaming `value`: what a Started event pins for a file's definition. */
  const renamedText = [
    '---',
    'name: tester',
    'description: An agent for tests.',
    'paramNameOverrides:',
    '  look: { value: v }',
    '  write_note: { value: v }',
    '---',
    'You are the test agent.',
    '',
  ].join('\n');

  function expectAllRecorded(events: readonly AuditEvent[], fixture: ReturnType<typeof fixtureTools>) {
    expect([fixture.writes(), fixture.reads()]).toEqual([0, 0]);
    expect(eventsOf(events, 'ToolResult').map((r) => [r.name, r.replay])).toEqual([
      ['look', 'recorded'],
      ['look', 'recorded'],
      ['write_note', 'recorded'],
      ['complete_task', undefined],
    ]);
  }

  it('answers a call from the recording when the replay renames a parameter the recording did not', async () => {
    const { recording } = await record();
    const fixture = fixtureTools();
    const replay = await runScripted(renamedSteps, {
      tools: fixture.tools,
      definition: { paramNameOverrides: renamed },
      run: { replay: recording },
    });
    expectAllRecorded(replay.events, fixture);
    // The journal still holds the arguments as the model gave them.
    expect(eventsOf(replay.events, 'ToolCall')[2]?.args).toEqual({ v: 'n1' });
    expect(replay.outcome).toMatchObject({ status: 'completed', result: { done: true } });
  });

  it('answers a call from the recording when the recording renamed a parameter the replay does not', async () => {
    for (const definition of [
      { paramNameOverrides: renamed },
      // A definition read from a file: the Started event pins its text, parsed again to read it.
      { paramNameOverrides: renamed, text: renamedText },
    ]) {
      const recorder = fixtureTools();
      const recorded = await runScripted(renamedSteps, { tools: recorder.tools, definition });
      expect(eventsOf(recorded.events, 'ToolCall')[0]?.args).toEqual({ v: 'x' });
      const recording = await recordingOf(recorded.events, 'recorded.jsonl');
      expect(recording.calls.map((call) => call.args)).toEqual([
        { value: 'x' },
        { value: 'x' },
        { value: 'n1' },
        { result: { done: true } },
      ]);
      const fixture = fixtureTools();
      const replay = await runScripted(recordedSteps, { tools: fixture.tools, run: { replay: recording } });
      expectAllRecorded(replay.events, fixture);
    }
  });

  it('resumes a replay that renames a parameter: its own earlier calls count under canonical names', async () => {
    const { recording } = await record();
    const fixture = fixtureTools();
    const definition = { paramNameOverrides: renamed };
    const full = await runScripted(renamedSteps, {
      tools: fixture.tools,
      definition,
      run: { replay: recording },
    });
    const cut = full.events.findIndex((e) => e.type === 'ToolResult');
    const prefix = full.events.slice(0, cut + 1);
    const journal = new MemoryJournal({ events: prefix });
    await runScripted(renamedSteps.slice(1), {
      tools: fixture.tools,
      definition,
      run: { replay: recording, resumeFrom: prefix, journal },
    });
    expect([fixture.writes(), fixture.reads()]).toEqual([0, 0]);
    expect(toolResults(journal.events)).toEqual(toolResults(full.events));
  });
});
