import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseJournal } from '../../src/journal/reader.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { policySupervisor, tempDir } from './helpers.ts';

let supervisor: Supervisor | undefined;
afterEach(async () => {
  await supervisor?.close();
  supervisor = undefined;
});

describe('wait_for_instruction and complete_task across threads', () => {
  it('an instruction sent before the agent waits is queued, in order, never lost', async () => {
    supervisor = policySupervisor({ cwd: tempDir() });
    const handle = supervisor.spawn('worker', { task: 'Wait for 2 instructions, then report.' });
    handle.send('first');
    handle.send('second');
    const outcome = await handle.result;
    expect(outcome).toMatchObject({
      status: 'completed',
      result: { instructions: ['Instruction: first', 'Instruction: second'] },
    });
  });

  it('instructions past maxPendingInstructions are refused: send emits agent:dropped, instruct rejects', async () => {
    supervisor = policySupervisor({ cwd: tempDir(), maxPendingInstructions: 1 });
    const dropped: string[] = [];
    supervisor.on('agent:dropped', (event) => {
      expect(event.error).toMatchObject({ code: 'instruction_queue_full', fields: { limit: 1 } });
      dropped.push(event.text);
    });
    const handle = supervisor.spawn('worker', { task: 'Wait for 2 instructions, then report.' });
    // Once the agent has taken the first, the next one fits again.
    handle.once('instructed', () => handle.send('later'));
    // The agent has not started, so it has asked for nothing: one instruction fits, the next does not.
    handle.send('first');
    handle.send('second');
    await expect(supervisor.instruct(handle.id, 'third')).rejects.toMatchObject({
      code: 'instruction_queue_full',
      fields: { agentId: handle.id, pending: 1, limit: 1 },
    });
    expect(dropped).toEqual(['second']);
    const outcome = await handle.result;
    expect(outcome).toMatchObject({
      status: 'completed',
      result: { instructions: ['Instruction: first', 'Instruction: later'] },
    });
  });

  it('instruct to an id the supervisor never had says it is unknown; to an ended agent, that it is not running', async () => {
    supervisor = policySupervisor({ cwd: tempDir() });
    // Before, the unknown id was "not running", as if it had been an agent once.
    await expect(supervisor.instruct('no-such-id', 'hello')).rejects.toMatchObject({
      code: 'unknown_agent',
      fields: { agentId: 'no-such-id' },
      message: expect.stringContaining('No agent with id no-such-id in this supervisor'),
    });
    const handle = supervisor.spawn('worker', { task: 'Report on item 1.' });
    await handle.result;
    await expect(supervisor.instruct(handle.id, 'late')).rejects.toMatchObject({
      code: 'agent_not_running',
      fields: { agentId: handle.id },
    });
  });

  it('a wait with a retry policy runs out and the tool says no instruction arrived', async () => {
    const cwd = tempDir();
    const journalDir = path.join(cwd, 'journals');
    supervisor = policySupervisor({ cwd, journalDir });
    const { getAgent } = await import('../../src/definition/discovery.ts');
    const worker = await getAgent('worker', { cwd });
    const waits: string[] = [];
    supervisor.on('agent:waiting', (e) => waits.push(e.agentId));
    const handle = supervisor.spawn(
      {
        ...worker,
        toolConfig: { wait_for_instruction: { retry: { maxRetries: 2, baseDelayMs: 5, maxDelayMs: 10 } } },
      },
      { task: 'Wait for an instruction, then report.' },
    );
    const outcome = await handle.result;
    expect(outcome.status).toBe('completed');
    expect(waits).toContain(handle.id);
    const { events } = parseJournal(readFileSync(path.join(journalDir, `${handle.id}.jsonl`)));
    const result = events.find((e) => e.type === 'ToolResult' && e.name === 'wait_for_instruction');
    expect(result).toMatchObject({ ok: true });
    expect(result?.type === 'ToolResult' ? result.text : '').toMatch(/No instruction arrived/);
  });

  it('a second complete_task is refused and the first result stands', async () => {
    const cwd = tempDir();
    const journalDir = path.join(cwd, 'journals');
    supervisor = policySupervisor({ cwd, journalDir, defaultProvider: 'policy' });
    const handle = supervisor.spawn('worker', { task: 'Please complete twice.' });
    expect(await handle.result).toMatchObject({ status: 'completed', result: { n: 1 } });
    const { events } = parseJournal(readFileSync(path.join(journalDir, `${handle.id}.jsonl`)));
    const results = events.filter((e) => e.type === 'ToolResult' && e.name === 'complete_task');
    expect(results.map((e) => (e.type === 'ToolResult' ? [e.ok, e.text] : []))).toEqual([
      [true, 'Task complete: your result was delivered.'],
      [false, 'The task is already complete: complete_task succeeded. Stop now.'],
    ]);
  });

  it('a worker with an outputSchema delivers a result that matches it', async () => {
    supervisor = policySupervisor({ cwd: tempDir() });
    const { getAgent } = await import('../../src/definition/discovery.ts');
    const worker = await getAgent('worker', { cwd: tempDir() });
    const outcome = await supervisor.spawn(
      {
        ...worker,
        outputSchema: { type: 'object', required: ['verdict'], properties: { verdict: { type: 'string' } } },
      },
      { task: 'Review it.' },
    ).result;
    // The simulated model fills required fields from the schema it is shown.
    expect(outcome).toMatchObject({ status: 'completed', result: { verdict: expect.any(String) } });
  });
});
