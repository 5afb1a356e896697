/**
 * An agent's answer is JSON text. In a `troupe fanout --json` line it is escaped a second time, so
 * masking the printed line alone missed what masking the answer itself catches: a PEM key's body
 * (its line breaks become `\\n`). The same held for the Outcome line of `troupe run --json`.
 */
import { describe, expect, it } from 'vitest';
import { resultText } from '../../src/cli/shared/progress.ts';
import { redactText } from '../../src/journal/redact.ts';
import { createProgressRenderer } from '../../src/run-dir/render-progress.ts';
import type { ResultLine } from '../../src/run-dir/results.ts';

const PEM_BODY = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7';
const SHAPELESS = 'qz7Xw2mN4pL9vR3tK8yBc5';
const RESULT = {
  summary: `the key:\n-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY}\n-----END RSA PRIVATE KEY-----\n`,
};

const ended: ResultLine = {
  index: 0,
  agentId: 'abc-0',
  parentId: null,
  agent: 'worker',
  attempt: 1,
  status: 'completed',
  result: RESULT,
  answer: JSON.stringify(RESULT),
  usage: { inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 },
  costUsd: 0,
  rounds: 1,
  hostId: 0,
  restarts: 0,
  startedAt: '2025-01-01T00:00:00.000Z',
  endedAt: '2025-01-01T00:00:01.000Z',
};

describe('secrets in a JSON answer', () => {
  it('are masked in a fanout --json ended line, as the CLI prints it', () => {
    let out = '';
    const renderer = createProgressRenderer('json', {
      write: (text) => {
        out += text;
      },
      columns: () => 80,
      now: () => 0,
    });
    renderer.onEvent({ type: 'ended', line: ended });
    renderer.stop();
    // The CLI masks all it prints once more: that alone must not be what catches them.
    const printed = redactText(out);
    expect(printed).toContain('[REDACTED]');
    expect(printed).not.toContain(PEM_BODY);
    // Still one JSON object, its answer still JSON text.
    const line = JSON.parse(printed) as { line: { answer: string } };
    expect(JSON.parse(line.line.answer)).toEqual({
      summary: 'the key:\n-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n-----END RSA PRIVATE KEY-----\n',
    });
  });

  it('are masked by key in the result troupe run prints', () => {
    const outcome = {
      status: 'completed' as const,
      answer: '',
      result: { credentials: { password: { value: SHAPELESS } } },
    };
    const text = resultText(outcome as unknown as Parameters<typeof resultText>[0]);
    expect(text).toContain('[REDACTED]');
    expect(text).not.toContain(SHAPELESS);
  });
});
