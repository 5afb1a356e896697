import { describe, expect, it } from 'vitest';
import { Mailbox } from '../../../src/engines/threads/mailbox.ts';

describe('Mailbox bounds', () => {
  it('refuses a send past the unread limit with a typed error naming the agent', () => {
    const mailbox = new Mailbox(3, 'a1');
    for (const text of ['0', '1', '2']) mailbox.send(text);
    expect(() => mailbox.send('3')).toThrow(
      expect.objectContaining({
        code: 'instruction_queue_full',
        fields: { agentId: 'a1', pending: 3, limit: 3 },
      }),
    );
    expect(mailbox.size).toBe(3);
  });

  it('a refusal captures no stack trace: a sender past the bound may be refused 100,000 times', () => {
    const mailbox = new Mailbox(1, 'a4');
    mailbox.send('0');
    const limit = Error.stackTraceLimit;
    let refused: unknown;
    try {
      mailbox.send('1');
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({ code: 'instruction_queue_full', fields: { agentId: 'a4', limit: 1 } });
    // With a stack per refusal, 90,000 dropped sends cost about 40 MB of heap and half their time.
    expect((refused as Error).stack).not.toMatch(/\n\s+at /);
    expect(Error.stackTraceLimit).toBe(limit);
  });

  it('counts only instructions the agent has not asked for, and forgets the ones it has', async () => {
    const mailbox = new Mailbox(10, 'a2');
    const answers: (string | null)[] = [];
    for (let i = 0; i < 1000; i++) {
      mailbox.send(`text ${i}`);
      mailbox.park(i, undefined, (text) => answers.push(text));
    }
    expect(answers).toHaveLength(1000);
    expect(answers[999]).toBe('text 999');
    expect(mailbox.size).toBe(1000);
    // Instruction 999 was asked for, so 0..998 are journaled: memory holds a bounded tail only.
    expect(mailbox.kept).toBeLessThan(200);
    // A wait repeated after a crash asks for the same index again and gets the same text.
    expect(await mailbox.wait(999, undefined)).toBe('text 999');
    for (let i = 0; i < 10; i++) mailbox.send(`more ${i}`);
    expect(() => mailbox.send('one too many')).toThrow(
      expect.objectContaining({ code: 'instruction_queue_full' }),
    );
  });

  it('re-delivers at an index idempotently, and a re-delivery is not refused by the bound', () => {
    const mailbox = new Mailbox(2, 'a3');
    expect(mailbox.send('zero', 0)).toBe(0);
    expect(mailbox.send('zero again', 0)).toBe(0);
    expect(mailbox.send('one', 1)).toBe(1);
    // Two unread: a new instruction is refused, the recorded ones are re-sent without adding any.
    expect(() => mailbox.send('new')).toThrow(expect.objectContaining({ code: 'instruction_queue_full' }));
    expect(mailbox.send('one again', 1)).toBe(1);
    expect(mailbox.size).toBe(2);
    // A journal's third message, re-delivered before the agent asked for any, is added.
    expect(mailbox.send('two', 2)).toBe(2);
    expect(mailbox.size).toBe(3);
  });
});
