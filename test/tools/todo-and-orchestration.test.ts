import { describe, expect, it, vi } from 'vitest';
import {
  COMPLETE_TASK,
  declareCompleteTask,
  declareWaitForInstruction,
  WAIT_FOR_INSTRUCTION,
} from '../../src/tools/builtin/orchestration.ts';
import { TODOS_STATE_KEY } from '../../src/tools/builtin/todo-write.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();

describe('todo_write', () => {
  it('returns the list as a state update it also displays', async () => {
    const toolbox = toolboxFor(await tempDir());
    const result = await toolbox.call('todo_write', {
      todos: [
        { content: 'Read the code', status: 'completed' },
        { content: 'Write the fix', status: 'in_progress' },
        { content: 'Run the tests', status: 'pending' },
      ],
    });
    const text = [
      'Todo list (1/3 completed):',
      '1. [completed] Read the code',
      '2. [in_progress] Write the fix',
      '3. [pending] Run the tests',
    ].join('\n');
    expect(result).toMatchObject({
      ok: true,
      text,
      stateUpdates: [{ key: TODOS_STATE_KEY, text }],
      displayedStateKeys: [TODOS_STATE_KEY],
    });
  });

  it('removes the state for an empty list and rejects unknown statuses', async () => {
    const toolbox = toolboxFor(await tempDir());
    const cleared = await toolbox.call('todo_write', { todos: [] });
    expect(cleared.stateUpdates).toEqual([{ key: 'todos', text: null }]);
    expect(cleared.displayedStateKeys).toBeUndefined();
    const bad = await toolbox.call('todo_write', { todos: [{ content: 'x', status: 'done' }] });
    expect(bad.ok).toBe(false);
    expect(bad.text).toContain('`/todos/0/status` must be equal to one of the allowed values');
  });

  it('is admitted under plan, since it changes nothing outside the agent', async () => {
    expect(toolboxFor(await tempDir(), { permissionMode: 'plan' }).admitted.has('todo_write')).toBe(true);
  });
});

describe('complete_task and wait_for_instruction declarations', () => {
  it('run the behaviour the loop binds, after validating the arguments', async () => {
    const complete = vi.fn((_args: unknown) => ({ ok: true, text: 'Task completed.' }));
    const wait = vi.fn(() => ({ ok: true, text: 'Now do B.' }));
    const toolbox = toolboxFor(await tempDir(), { permissionMode: 'plan' }, [
      declareCompleteTask(complete),
      declareWaitForInstruction(wait),
    ]);
    expect(toolbox.admitted.has(COMPLETE_TASK)).toBe(true);
    expect(toolbox.admitted.has(WAIT_FOR_INSTRUCTION)).toBe(true);

    expect((await toolbox.call('complete_task', { result: 'not an object' })).ok).toBe(false);
    expect(complete).not.toHaveBeenCalled();
    expect(await toolbox.call('complete_task', { result: { answer: 42 } })).toMatchObject({ ok: true });
    expect(complete.mock.calls[0]?.[0]).toEqual({ result: { answer: 42 } });
    expect(await toolbox.call('wait_for_instruction', {})).toMatchObject({ ok: true, text: 'Now do B.' });
  });

  it('put an outputSchema into the complete_task parameters, so invalid results never reach the loop', async () => {
    const complete = vi.fn(() => ({ ok: true, text: 'ok' }));
    const outputSchema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { score: { type: 'number' } },
      required: ['score'],
    };
    const toolbox = toolboxFor(await tempDir(), {}, [declareCompleteTask(complete, { outputSchema })]);
    const spec = toolbox.specs.find((entry) => entry.name === 'complete_task');
    expect(spec?.parameters).toMatchObject({
      properties: { result: { type: 'object', required: ['score'] } },
      required: ['result'],
    });
    const bad = await toolbox.call('complete_task', { result: { score: 'high' } });
    expect(bad.text).toContain('`/result/score` must be number');
    expect(complete).not.toHaveBeenCalled();
    expect((await toolbox.call('complete_task', { result: { score: 0.9 } })).ok).toBe(true);
  });

  it('fail with a clear message when nothing is bound (prompt previews)', async () => {
    const toolbox = toolboxFor(await tempDir(), {}, [declareCompleteTask(), declareWaitForInstruction()]);
    expect((await toolbox.call('complete_task', { result: {} })).text).toBe(
      'complete_task is not connected to a supervisor here, so it cannot run.',
    );
    expect((await toolbox.call('wait_for_instruction', { reason: 'idle' })).ok).toBe(false);
  });
});
