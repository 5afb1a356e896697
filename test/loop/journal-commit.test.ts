/**
 * The loop with a batching journal writer (what actor hosts use): events wait in memory for the
 * turn, and the loop commits them before each side effect. Whatever a crash loses is then only
 * events whose effects had not begun.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../src/journal/events.ts';
import { readJournal } from '../../src/journal/reader.ts';
import { verifyJournalFile } from '../../src/journal/verify.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import { runAgent } from '../../src/loop/run-agent.ts';
import { ScriptedProvider, type ScriptedStep } from '../../src/providers/scripted.ts';
import { createToolRegistry } from '../../src/tools/builtin/index.ts';
import { makeDefinition } from '../prompt/make-definition.ts';
import { recordingTool, tempDir } from './helpers.ts';

const onDisk = (file: string): readonly AuditEvent[] => readJournal(file).events;

function steps(seen: (label: string) => void): ScriptedStep[] {
  return [
    (request) => {
      seen(`request ${request.index}`);
      return { toolCalls: [{ id: 'c1', name: 'act', arguments: { value: 'a' } }] };
    },
    (request) => {
      seen(`request ${request.index}`);
      return { toolCalls: [{ id: 'c2', name: 'act', arguments: { value: 'b' } }] };
    },
    (request) => {
      seen(`request ${request.index}`);
      return { toolCalls: [{ id: 'c3', name: 'complete_task', arguments: { result: { done: true } } }] };
    },
  ];
}

async function run(
  file: string,
  seen: (label: string) => void,
  resumeFrom?: readonly AuditEvent[],
  script: ScriptedStep[] = steps(seen),
) {
  const { tool, calls } = recordingTool('act', (args) => {
    seen(`tool ${String(args.value)}`);
    return { ok: true, text: `acted ${String(args.value)}` };
  });
  const journal = JournalWriter.open(file, { batch: true });
  const cwd = tempDir('troupe-commit-');
  try {
    const outcome = await runAgent({
      agentId: 'agent-1',
      definition: makeDefinition({ tools: ['act', 'complete_task'] }),
      task: 'Act twice, then complete.',
      provider: new ScriptedProvider(script),
      model: 'test-model',
      registry: createToolRegistry([tool]),
      cwd,
      journal,
      systemPrompt: 'SYSTEM',
      sleep: async () => {},
      ...(resumeFrom ? { resumeFrom, truncatedBytes: 0 } : {}),
    });
    return { outcome, calls };
  } finally {
    journal.close();
  }
}

describe('the loop with a batching journal writer', () => {
  it('stores each request before it is sent and each tool call before the tool starts', async () => {
    const file = path.join(tempDir('troupe-commit-'), 'agent-1.jsonl');
    const checks: string[] = [];
    const { outcome } = await run(file, (label) => {
      const events = onDisk(file);
      const last = events.at(-1);
      if (label.startsWith('request')) {
        const index = Number(label.split(' ')[1]);
        const submitted = events.filter((event) => event.type === 'InferenceSubmitted');
        checks.push(`${label}: ${submitted.length === index + 1 && last?.type === 'InferenceSubmitted'}`);
      } else {
        checks.push(`${label}: ${last?.type === 'ToolCall' && last.name === 'act'}`);
      }
    });
    expect(outcome).toMatchObject({ status: 'completed' });
    expect(checks).toEqual([
      'request 0: true',
      'tool a: true',
      'request 1: true',
      'tool b: true',
      'request 2: true',
    ]);
    // Everything is on disk once runAgent returns, and it verifies.
    expect(onDisk(file).at(-1)?.type).toBe('Completed');
    expect(verifyJournalFile(file).ok).toBe(true);
  });

  it('a crash while a tool runs loses no finished call: resume runs each finished call once', async () => {
    const dir = tempDir('troupe-commit-');
    const file = path.join(dir, 'agent-1.jsonl');
    let crashed: Buffer | undefined;
    // The second tool call's start is the crash point: a killed process leaves the file as it is.
    await run(file, (label) => {
      if (label === 'tool b') crashed = readFileSync(file);
    });
    if (!crashed) throw new Error('the run never reached the second tool call');
    const copy = path.join(dir, 'crashed.jsonl');
    writeFileSync(copy, crashed);
    const before = onDisk(copy);
    expect(before.filter((event) => event.type === 'ToolResult').map((event) => event.callId)).toEqual([
      'c1',
    ]);
    expect(before.at(-1)).toMatchObject({ type: 'ToolCall', callId: 'c2' });

    const ran: string[] = [];
    const resumed = await run(
      copy,
      (label) => {
        if (label.startsWith('tool')) ran.push(label);
      },
      before,
      [{ toolCalls: [{ id: 'c3', name: 'complete_task', arguments: { result: { done: true } } }] }],
    );
    expect(resumed.outcome.status).toBe('completed');
    // c1 finished before the crash and c2 may have acted: neither runs again.
    expect(ran).toEqual([]);
    const results = onDisk(copy).filter((event) => event.type === 'ToolResult');
    expect(results.map((event) => event.callId)).toEqual(['c1', 'c2', 'c3']);
    expect(verifyJournalFile(copy).ok).toBe(true);
  });
});

describe('wait_for_instruction with a batching journal writer', () => {
  it('writes its ToolCall with Waiting, in one write, before it asks for the instruction', async () => {
    const dir = tempDir('troupe-commit-');
    const file = path.join(dir, 'agent-1.jsonl');
    const journal = JournalWriter.open(file, { batch: true });
    // The event types each write added to the file.
    const writes: string[][] = [];
    let stored = 0;
    const commit = journal.commit.bind(journal);
    journal.commit = () => {
      commit();
      const events = onDisk(file);
      if (events.length > stored) writes.push(events.slice(stored).map((event) => event.type));
      stored = events.length;
    };
    const atWait: (string | undefined)[] = [];
    try {
      const outcome = await runAgent({
        agentId: 'agent-1',
        definition: makeDefinition({ tools: ['wait_for_instruction', 'complete_task'] }),
        task: 'Wait, then complete.',
        provider: new ScriptedProvider([
          () => ({ toolCalls: [{ id: 'w1', name: 'wait_for_instruction', arguments: {} }] }),
          () => ({ toolCalls: [{ id: 'c1', name: 'complete_task', arguments: { result: { done: true } } }] }),
        ]),
        model: 'test-model',
        registry: createToolRegistry([]),
        cwd: tempDir('troupe-commit-'),
        journal,
        systemPrompt: 'SYSTEM',
        sleep: async () => {},
        channels: {
          completeTask: async () => ({ accepted: true }),
          waitForInstruction: async () => {
            atWait.push(
              ...onDisk(file)
                .slice(-2)
                .map((event) => event.type),
            );
            return 'go';
          },
        },
      });
      expect(outcome.status).toBe('completed');
    } finally {
      journal.close();
    }
    // Everything before the wait is on disk when it asks, in one write (not one for the call and one for Waiting).
    expect(atWait).toEqual(['ToolCall', 'Waiting']);
    expect(writes).toContainEqual(['ProviderReceipt', 'ToolCall', 'Waiting']);
    expect(verifyJournalFile(file).ok).toBe(true);
  });
});
