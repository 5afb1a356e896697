import { describe, expect, it, vi } from 'vitest';
import { backoffDelay, sleep } from '../../src/tools/retry.ts';
import type { Tool, ToolOutcome } from '../../src/tools/types.ts';
import { useTempDirs } from '../prompt/temp-dir.ts';
import { toolboxFor } from './harness.ts';

const tempDir = useTempDirs();
const policy = { maxRetries: 3, baseDelayMs: 100, maxDelayMs: 300 };

function flakyTool(outcomes: ToolOutcome[]) {
  const execute = vi.fn(() => outcomes.shift() ?? { ok: true, text: 'finally' });
  const tool: Tool = {
    name: 'fetch_page',
    description: 'Fetches a page.',
    parameters: { type: 'object', properties: {} },
    readOnly: true,
    execute,
  };
  return { tool, execute };
}

const busy: ToolOutcome = { ok: false, text: 'busy', retryable: true };

describe('tool retry', () => {
  it('grows exponentially up to maxDelayMs, jittering the upper half of each step', () => {
    expect([0, 1, 2, 3].map((attempt) => backoffDelay(policy, attempt, () => 0))).toEqual([
      50, 100, 150, 150,
    ]);
    expect([0, 1, 2, 3].map((attempt) => backoffDelay(policy, attempt, () => 1))).toEqual([
      100, 200, 300, 300,
    ]);
  });

  it('never waits past the longest timer delay, which Node would fire at once', () => {
    const huge = { maxRetries: 1, baseDelayMs: 3e9, maxDelayMs: 3e9 };
    expect(backoffDelay(huge, 0, () => 1)).toBe(2_147_483_647);
    expect(backoffDelay(huge, 0, () => 0)).toBe(1_500_000_000);
  });

  it('is finite at every attempt, a base delay of 0 included (0 * 2^1024 was NaN)', () => {
    const instant = { maxRetries: 1000, baseDelayMs: 0, maxDelayMs: 4000 };
    for (const attempt of [0, 1023, 1024, 5000, Number.POSITIVE_INFINITY]) {
      expect(
        backoffDelay(instant, attempt, () => 1),
        `attempt ${attempt}`,
      ).toBe(0);
    }
    for (const attempt of [1024, 5000, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(
        backoffDelay(policy, attempt, () => 0),
        `attempt ${attempt}`,
      ).toBe(150);
      expect(
        backoffDelay(policy, attempt, () => 1),
        `attempt ${attempt}`,
      ).toBe(300);
    }
  });

  it('retries a retryable failure with backoff until it succeeds', async () => {
    const { tool, execute } = flakyTool([busy, busy]);
    const delays: number[] = [];
    const toolbox = toolboxFor(await tempDir(), { toolConfig: { fetch_page: { retry: policy } } }, [tool], {
      sleep: async (ms) => {
        delays.push(ms);
      },
      random: () => 0.5,
    });
    const result = await toolbox.call('fetch_page', {});
    expect(result).toMatchObject({ ok: true, text: 'finally', attempts: 3 });
    expect(execute).toHaveBeenCalledTimes(3);
    expect(delays).toEqual([75, 150]);
  });

  it('gives up after maxRetries and returns the last failure', async () => {
    const { tool, execute } = flakyTool([busy, busy, busy, busy, busy]);
    const toolbox = toolboxFor(await tempDir(), { toolConfig: { fetch_page: { retry: policy } } }, [tool], {
      sleep: async () => {},
    });
    expect(await toolbox.call('fetch_page', {})).toMatchObject({ ok: false, text: 'busy', attempts: 4 });
    expect(execute).toHaveBeenCalledTimes(4);
  });

  it('does not retry failures that are not marked retryable, nor tools without a retry policy', async () => {
    const plain = flakyTool([{ ok: false, text: 'bad input' }]);
    const configured = toolboxFor(await tempDir(), { toolConfig: { fetch_page: { retry: policy } } }, [
      plain.tool,
    ]);
    expect(await configured.call('fetch_page', {})).toMatchObject({ ok: false, attempts: 1 });

    const flaky = flakyTool([busy]);
    const unconfigured = toolboxFor(await tempDir(), {}, [flaky.tool]);
    expect(await unconfigured.call('fetch_page', {})).toMatchObject({ ok: false, text: 'busy', attempts: 1 });
  });

  it('stops retrying when the signal aborts during the wait', async () => {
    const { tool, execute } = flakyTool([busy, busy]);
    const controller = new AbortController();
    const toolbox = toolboxFor(await tempDir(), { toolConfig: { fetch_page: { retry: policy } } }, [tool], {
      sleep: (ms, signal) => {
        controller.abort(new Error('stop'));
        return sleep(ms, signal);
      },
    });
    const result = await toolbox.call('fetch_page', {}, { signal: controller.signal });
    expect(result).toMatchObject({ ok: false, text: 'busy', attempts: 1 });
    expect(execute).toHaveBeenCalledOnce();
  });

  it('retries a tool that throws, with the configured backoff, until it succeeds', async () => {
    let calls = 0;
    const tool: Tool = {
      name: 'fetch_page',
      description: 'Fetches a page.',
      parameters: { type: 'object', properties: {} },
      readOnly: true,
      execute: () => {
        calls += 1;
        if (calls < 3) throw new Error(`ECONNRESET ${calls}`);
        return { ok: true, text: 'page' };
      },
    };
    const delays: number[] = [];
    const toolbox = toolboxFor(await tempDir(), { toolConfig: { fetch_page: { retry: policy } } }, [tool], {
      sleep: async (ms) => {
        delays.push(ms);
      },
      random: () => 0.5,
    });
    expect(await toolbox.call('fetch_page', {})).toMatchObject({ ok: true, text: 'page', attempts: 3 });
    expect(delays).toEqual([75, 150]);
  });

  it('gives a tool that keeps throwing its last error after maxRetries', async () => {
    const execute = vi.fn(() => {
      throw new Error('disk on fire');
    });
    const tool: Tool = {
      name: 'fetch_page',
      description: 'Fetches a page.',
      parameters: { type: 'object', properties: {} },
      readOnly: true,
      execute,
    };
    const toolbox = toolboxFor(await tempDir(), { toolConfig: { fetch_page: { retry: policy } } }, [tool], {
      sleep: async () => {},
    });
    expect(await toolbox.call('fetch_page', {})).toMatchObject({
      ok: false,
      text: 'fetch_page failed: disk on fire',
      attempts: 4,
    });
    expect(execute).toHaveBeenCalledTimes(4);
  });

  it('does not retry a cancellation: an AbortError, or a throw once the signal aborted', async () => {
    const abortError = vi.fn(() => {
      throw new DOMException('The operation was aborted.', 'AbortError');
    });
    const tool = (execute: Tool['execute']): Tool => ({
      name: 'fetch_page',
      description: 'Fetches a page.',
      parameters: { type: 'object', properties: {} },
      readOnly: true,
      execute,
    });
    const config = { toolConfig: { fetch_page: { retry: policy } } };
    const first = toolboxFor(await tempDir(), config, [tool(abortError)], { sleep: async () => {} });
    expect(await first.call('fetch_page', {})).toMatchObject({ ok: false, attempts: 1 });
    expect(abortError).toHaveBeenCalledOnce();

    const controller = new AbortController();
    const cancelled = vi.fn(() => {
      controller.abort(new Error('stop'));
      throw new Error('interrupted');
    });
    const second = toolboxFor(await tempDir(), config, [tool(cancelled)], { sleep: async () => {} });
    expect(await second.call('fetch_page', {}, { signal: controller.signal })).toMatchObject({
      ok: false,
      attempts: 1,
    });
    expect(cancelled).toHaveBeenCalledOnce();
  });

  it('sleep removes its abort listener when the timer fires, and rejects with the reason on abort', async () => {
    const controller = new AbortController();
    const added = vi.spyOn(controller.signal, 'addEventListener');
    const removed = vi.spyOn(controller.signal, 'removeEventListener');
    await sleep(1, controller.signal);
    expect(added).toHaveBeenCalledOnce();
    expect(removed).toHaveBeenCalledWith('abort', added.mock.calls[0]?.[1]);

    const pending = sleep(60_000, controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(pending).rejects.toThrow('cancelled');
    await expect(sleep(0, AbortSignal.abort(new Error('early')))).rejects.toThrow('early');
  });
});
