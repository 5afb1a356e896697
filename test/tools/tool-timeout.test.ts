/**
 * A tool call's time limit (`Tool.timeoutMs`, default DEFAULT_TOOL_TIMEOUT_MS): a tool whose
 * promise never settles fails its call instead of holding its agent for ever.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_TOOL_TIMEOUT_MS } from '../../src/constants.ts';
import { hasErrorCode } from '../../src/errors.ts';
import { declareCompleteTask, declareWaitForInstruction } from '../../src/tools/builtin/orchestration.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import type { Tool, ToolContext, ToolOutcome } from '../../src/tools/types.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();

afterEach(() => {
  vi.useRealTimers();
});

const NO_ARGS = { type: 'object', properties: {}, additionalProperties: false } as const;

/** A tool that never answers, recording the signal it was given. */
function hangingTool(fields: Partial<Tool> = {}): { tool: Tool; signals: AbortSignal[] } {
  const signals: AbortSignal[] = [];
  const tool: Tool = {
    name: 'hang',
    description: 'never answers',
    parameters: NO_ARGS,
    readOnly: true,
    execute: (_args: Record<string, unknown>, ctx: ToolContext) => {
      signals.push(ctx.signal);
      return new Promise<ToolOutcome>(() => {});
    },
    ...fields,
  };
  return { tool, signals };
}

describe('tool time limit', () => {
  it('fails a call whose promise never settles once its timeoutMs has passed, and aborts its signal', async () => {
    const { tool, signals } = hangingTool({ timeoutMs: 20 });
    const toolbox = toolboxFor(await tempDir(), {}, [tool]);
    const result = await toolbox.call('hang', {});
    expect(result).toMatchObject({ ok: false, canonicalName: 'hang', attempts: 1 });
    expect(result.text).toBe(
      'hang did not finish within 20 ms (its time limit) and was abandoned. Do not call it again with the same arguments.',
    );
    expect(signals[0]?.aborted).toBe(true);
    expect(signals[0]?.reason).toMatchObject({ name: 'TimeoutError' });
  });

  it('applies DEFAULT_TOOL_TIMEOUT_MS to a tool that sets no timeoutMs', async () => {
    vi.useFakeTimers();
    const { tool } = hangingTool();
    const toolbox = toolboxFor(await tempDir(), {}, [tool]);
    const call = toolbox.call('hang', {});
    await vi.advanceTimersByTimeAsync(DEFAULT_TOOL_TIMEOUT_MS - 1);
    let settled = false;
    void call.then(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect((await call).text).toContain(`did not finish within ${DEFAULT_TOOL_TIMEOUT_MS} ms`);
  });

  it('says the time ran out even when the tool rejects as soon as its signal aborts', async () => {
    const tool: Tool = {
      name: 'slow',
      description: 'rejects on abort',
      parameters: NO_ARGS,
      readOnly: true,
      timeoutMs: 10,
      execute: (_args, ctx) =>
        new Promise<ToolOutcome>((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
        }),
    };
    const result = await toolboxFor(await tempDir(), {}, [tool]).call('slow', {});
    expect(result.text).toContain('slow did not finish within 10 ms');
  });

  it('does not retry a call that ran out of time', async () => {
    const { tool, signals } = hangingTool({ timeoutMs: 10 });
    const toolbox = toolboxFor(
      await tempDir(),
      { toolConfig: { hang: { retry: { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 1 } } } },
      [tool],
    );
    const result = await toolbox.call('hang', {});
    expect(result).toMatchObject({ ok: false, attempts: 1 });
    expect(signals).toHaveLength(1);
  });

  it('leaves a tool with timeoutMs 0 untimed, and removes its listener from the caller signal', async () => {
    vi.useFakeTimers();
    let answer: ((outcome: ToolOutcome) => void) | undefined;
    const tool: Tool = {
      name: 'waits',
      description: 'answers when told',
      parameters: NO_ARGS,
      readOnly: true,
      timeoutMs: 0,
      execute: () =>
        new Promise<ToolOutcome>((resolve) => {
          answer = resolve;
        }),
    };
    const toolbox = toolboxFor(await tempDir(), {}, [tool]);
    const call = toolbox.call('waits', {});
    await vi.advanceTimersByTimeAsync(DEFAULT_TOOL_TIMEOUT_MS * 2);
    answer?.({ ok: true, text: 'late but fine' });
    expect(await call).toMatchObject({ ok: true, text: 'late but fine' });
  });

  it('passes a cancellation of the caller on to the tool, and answers a quick tool as before', async () => {
    const controller = new AbortController();
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const quick: Tool = {
      name: 'quick',
      description: 'answers at once',
      parameters: NO_ARGS,
      readOnly: true,
      execute: () => ({ ok: true, text: 'now' }),
    };
    const stoppable: Tool = {
      name: 'stoppable',
      description: 'rejects on abort',
      parameters: NO_ARGS,
      readOnly: true,
      timeoutMs: 60_000,
      execute: (_args, ctx) =>
        new Promise<ToolOutcome>((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
          started();
        }),
    };
    const toolbox = toolboxFor(await tempDir(), {}, [quick, stoppable]);
    expect(await toolbox.call('quick', {})).toMatchObject({ ok: true, text: 'now' });
    const call = toolbox.call('stoppable', {}, { signal: controller.signal });
    await running;
    controller.abort(new Error('agent cancelled'));
    expect(await call).toMatchObject({ ok: false, text: 'stoppable failed: agent cancelled' });
  });

  it('refuses a timeoutMs that is not an integer a timer can take', () => {
    for (const timeoutMs of [-1, 1.5, Number.NaN, 2 ** 31, '100' as unknown as number]) {
      const { tool } = hangingTool({ timeoutMs });
      let caught: unknown;
      try {
        new ToolRegistry([tool]);
      } catch (error) {
        caught = error;
      }
      expect(hasErrorCode(caught, 'invalid_tool'), String(timeoutMs)).toBe(true);
    }
  });

  it('gives the tools that wait by design or bound themselves no time limit of their own', async () => {
    const toolbox = toolboxFor(await tempDir());
    expect(toolbox.admitted.get('run_terminal_cmd')?.timeoutMs).toBe(0);
    expect(declareWaitForInstruction().timeoutMs).toBe(0);
    expect(declareCompleteTask().timeoutMs).toBe(0);
    expect(toolbox.admitted.get('read_file')?.timeoutMs).toBeUndefined();
  });
});
