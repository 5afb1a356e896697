/**
 * Which signals a worker sends for an agent job: the per-request ones only when the job's data says
 * the supervisor listens for them (no Redis needed: the sender is handed a recording stub).
 */
import { describe, expect, it } from 'vitest';
import { signalSender } from '../../../src/engines/redis/agent-job.ts';
import type { SignalSender } from '../../../src/engines/redis/signals.ts';
import type { OptionalSignal } from '../../../src/protocol/messages.ts';
import type { AgentJobData, WorkerSignal } from '../../../src/protocol/redis.ts';

function recorder(): { sent: [string, string][]; signals: SignalSender } {
  const sent: [string, string][] = [];
  const signals = {
    send: (to: string, s: WorkerSignal) => sent.push([to, s.type]),
  } as unknown as SignalSender;
  return { sent, signals };
}

const job = (wantedSignals?: readonly OptionalSignal[]): AgentJobData =>
  ({ supervisorId: 'sup-1', ...(wantedSignals ? { wantedSignals } : {}) }) as unknown as AgentJobData;

const round: WorkerSignal = { type: 'round', agentId: 'a', round: 1, estimatedTokens: 10 };
const text = { type: 'text', agentId: 'a', round: 1, text: 'hi' } as unknown as WorkerSignal;
const started: WorkerSignal = { type: 'started', agentId: 'a', workerId: 1, resumed: false, restart: 0 };
const waiting = { type: 'waiting', agentId: 'a' } as unknown as WorkerSignal;

describe('agent job signals', () => {
  it('drops per-request signals nobody listens for and always sends the others', () => {
    const { sent, signals } = recorder();
    const send = signalSender({ signals }, job([]));
    for (const s of [started, round, text, waiting]) send(s);
    expect(sent).toEqual([
      ['sup-1', 'started'],
      ['sup-1', 'waiting'],
    ]);
  });

  it('sends the per-request signals the supervisor listened for when it ran the agent', () => {
    const { sent, signals } = recorder();
    const send = signalSender({ signals }, job(['round']));
    for (const s of [round, text]) send(s);
    expect(sent).toEqual([['sup-1', 'round']]);
  });

  it('sends every signal of a job whose data predates the field', () => {
    const { sent, signals } = recorder();
    const send = signalSender({ signals }, job());
    for (const s of [round, text]) send(s);
    expect(sent.map(([, type]) => type)).toEqual(['round', 'text']);
  });
});
