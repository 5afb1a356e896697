/**
 * Captures as the seed specifies them (the prompt reaches the model), results that do not fit
 * (a failed call: no capture, no completion), and `fitsState` in a tool's context.
 */
import { describe, expect, it } from 'vitest';
import { RESULT_NOT_FITTED_TEXT } from '../../src/projection/constants.ts';
import type { Tool } from '../../src/tools/types.ts';
import { eventsOf, recordingTool, runScripted } from './helpers.ts';

const HUGE = 'x '.repeat(60_000);

describe('captures', () => {
  it('shows the capture prompt to the model in the capture turn', async () => {
    const draft = recordingTool('draft', () => ({
      ok: true,
      text: 'Ready for the draft.',
      capture: {
        prompt: 'Write the release notes as three bullet points.',
        onCapture: () => ({ ok: true, text: 'saved' }),
      },
    }));
    const { provider, events } = await runScripted(
      [
        { toolCalls: [{ name: 'draft', arguments: {} }] },
        (request) => {
          expect(request.tools).toEqual([]);
          return { text: '- one\n- two\n- three' };
        },
        { text: 'done' },
      ],
      { tools: [draft.tool] },
    );
    const captureInput = provider.requests[1]?.input ?? '';
    expect(captureInput).toContain('Write the release notes as three bullet points.');
    // It is the last thing the model reads before answering.
    expect(captureInput.trimEnd().endsWith('Write the release notes as three bullet points.')).toBe(true);
    expect(
      eventsOf(events, 'HistoryAppended').find((event) => event.kind === 'capture_prompt'),
    ).toMatchObject({
      callId: 'call_0_0',
    });
  });

  it('a result withheld for not fitting is a failed call: no capture starts', async () => {
    const onCapture = (): { ok: boolean; text: string } => {
      throw new Error('a withheld result must not start its capture');
    };
    const draft = recordingTool('draft', () => ({
      ok: true,
      text: HUGE,
      capture: { prompt: 'p', onCapture },
    }));
    const { outcome, provider, events } = await runScripted(
      [
        { toolCalls: [{ name: 'draft', arguments: {} }] },
        (request) => {
          // No capture turn: the tools are still offered, and the model was told the result did not fit.
          expect(request.tools.length).toBeGreaterThan(0);
          expect(request.toolResults[0]?.result).toBe(RESULT_NOT_FITTED_TEXT);
          return { text: 'ok' };
        },
      ],
      { tools: [draft.tool], run: { maxInputTokens: 20_000 } },
    );
    expect(outcome.status).toBe('completed');
    expect(provider.requests).toHaveLength(2);
    expect(eventsOf(events, 'ToolResult')[0]).toMatchObject({
      ok: true,
      projectionAccepted: false,
      text: HUGE,
    });
    expect(eventsOf(events, 'InferenceSubmitted').some((event) => event.captureFor !== undefined)).toBe(
      false,
    );
  });

  it('a result withheld for not fitting does not satisfy a completion requirement', async () => {
    const submit = recordingTool('submit_report', () => ({ ok: true, text: HUGE }));
    const { outcome } = await runScripted(
      [
        { toolCalls: [{ name: 'submit_report', arguments: {} }] },
        { text: 'I submitted it.' },
        { text: 'Still done.' },
      ],
      {
        tools: [submit.tool],
        definition: {
          completionRequirement: {
            tool: 'submit_report',
            reminder: 'Call submit_report.',
            recovery: { maxRetries: 1, baseDelayMs: 0, maxDelayMs: 0 },
          },
        },
        run: { maxInputTokens: 20_000 },
      },
    );
    expect(submit.calls).toHaveLength(1);
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'model_behavior',
      error: { code: 'completion_required' },
    });
  });
});

describe('fitsState in a tool context', () => {
  it('tells a tool whether a state update would fit the agent’s budget, changing nothing', async () => {
    const answers: boolean[] = [];
    const probe: Tool = {
      name: 'probe',
      description: 'Checks what fits.',
      parameters: { type: 'object', properties: {} },
      readOnly: true,
      execute: (_args, ctx) => {
        answers.push(
          ctx.fitsState('file:a', 'small'),
          ctx.fitsState('file:a', HUGE),
          ctx.fitsState('file:a', null),
        );
        return { ok: true, text: 'probed' };
      },
    };
    const { provider } = await runScripted(
      [{ toolCalls: [{ name: 'probe', arguments: {} }] }, { text: 'done' }],
      {
        tools: [probe],
        run: { maxInputTokens: 20_000 },
      },
    );
    expect(answers).toEqual([true, false, true]);
    // Asking changed nothing: no state appears in the next input.
    expect(provider.requests[1]?.input).not.toContain('small');
  });
});
