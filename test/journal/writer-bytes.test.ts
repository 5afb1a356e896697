import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEventInput } from '../../src/journal/events.ts';
import { MemoryJournal } from '../../src/journal/sink.ts';
import { JournalWriter } from '../../src/journal/writer.ts';
import { steppingClock, writeSampleRun } from './helpers.ts';

/**
 * The exact bytes a journal holds for known event sequences, pinned by digest: the write path may
 * change how it builds and writes lines, never what reaches the file.
 */
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-journal-bytes-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A fan-out agent's real journal (38 events), as bodies without their chain fields. */
function fanoutInputs(): AuditEventInput[] {
  const text = readFileSync(new URL('./fixtures/fanout-agent.jsonl', import.meta.url), 'utf8');
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const { seq: _s, prev: _p, hash: _h, ts: _t, ...body } = JSON.parse(line) as Record<string, unknown>;
      return body as unknown as AuditEventInput;
    });
}

/** Bodies with what canonical JSON and masking must get exactly right. */
function trickyInputs(agentId: string): AuditEventInput[] {
  const odd = {
    agentId,
    type: 'ToolResult',
    callId: 'c-1',
    name: 'http_get',
    ok: true,
    round: 2,
    text: 'caf\u00e9 \u{1F600} "quoted" back\\slash tab\t nl\n ctrl\u0001 lone\ud800 end\u2028',
    data: {
      z: [1, undefined, Number.NaN, -0, 1e21, 'x'],
      a: { apiKey: 'sk-abcdefghijklmnop', nested: { token: 'abc', tokens: 3 } },
      '10': 'integer-like key',
      'b\u00e9': null,
      when: new Date(Date.UTC(2024, 1, 2)),
      skip: undefined,
    },
    stateUpdates: [],
    displayedStateKeys: [],
    projectionAccepted: true,
  };
  const secretText = {
    agentId,
    type: 'ToolResult',
    callId: 'c-2',
    name: 'read_file',
    ok: false,
    round: 3,
    text: `Authorization: Bearer abcdefgh12345678\nOPENAI_API_KEY=sk-proj-0123456789abcdef\n${'long line '.repeat(40)}`,
    stateUpdates: [],
    displayedStateKeys: [],
    projectionAccepted: false,
  };
  return [odd, secretText] as unknown as AuditEventInput[];
}

function digestOf(file: string): { bytes: number; sha256: string } {
  const bytes = readFileSync(file);
  return { bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

describe('journal bytes on disk', () => {
  for (const batch of [false, true]) {
    it(`are unchanged for a fan-out agent's events and tricky values (batch: ${batch})`, () => {
      const inputs = fanoutInputs();
      const agentId = (inputs[0] as { agentId: string }).agentId;
      const file = path.join(dir, 'agent.jsonl');
      const writer = JournalWriter.open(file, { now: steppingClock(), batch });
      for (const [i, input] of [...inputs, ...trickyInputs(agentId)].entries()) {
        writer.append(input);
        if (i % 3 === 0) writer.commit();
      }
      writer.close();
      expect(digestOf(file)).toEqual(EXPECTED);
    });
  }

  it('are what a MemoryJournal renders for the same events', () => {
    const inputs = fanoutInputs();
    const agentId = (inputs[0] as { agentId: string }).agentId;
    const file = path.join(dir, 'agent.jsonl');
    const writer = JournalWriter.open(file, { now: steppingClock(), batch: true });
    const memory = new MemoryJournal({ now: steppingClock() });
    for (const input of [...inputs, ...trickyInputs(agentId)]) {
      writer.append(input);
      memory.append(input);
    }
    writer.close();
    expect(readFileSync(file, 'utf8')).toBe(memory.toJsonl());
  });

  it('are unchanged for the sample run', () => {
    const file = path.join(dir, 'agent.jsonl');
    const writer = JournalWriter.open(file, { now: steppingClock(), batch: true });
    writeSampleRun(writer);
    writer.close();
    expect(digestOf(file)).toEqual(SAMPLE);
  });

  it("keeps an event's chain fields when a toJSON in its body chains another event meanwhile", () => {
    const other = new MemoryJournal({ now: steppingClock() });
    const body = (nested: boolean) =>
      ({
        agentId: 'agent-a',
        type: 'ToolResult',
        callId: 'c-1',
        name: 'noop',
        ok: true,
        round: 1,
        text: 'ok',
        data: {
          toJSON: () => {
            if (nested) other.append({ ...(body(false) as object), agentId: 'agent-b' } as AuditEventInput);
            return { x: 1 };
          },
        },
        stateUpdates: [],
        displayedStateKeys: [],
        projectionAccepted: true,
      }) as unknown as AuditEventInput;
    const plain = new MemoryJournal({ now: steppingClock() });
    const chained = new MemoryJournal({ now: steppingClock() });
    for (let i = 0; i < 3; i += 1) {
      other.append({ ...(body(false) as object), agentId: 'agent-b' } as AuditEventInput);
      plain.append(body(false));
      chained.append(body(true));
    }
    expect(chained.toJsonl()).toBe(plain.toJsonl());
  });
});

const EXPECTED = { bytes: 20877, sha256: '25ce82f489c1953d027757a9e03ceb47743ce739567604a38d655299f9ab9885' };
const SAMPLE = { bytes: 8737, sha256: '174a9957b5380d0aab259833dd6676a44c9ea17ffb39797e5a3ec4c16e8384ed' };
