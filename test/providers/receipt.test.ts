import { describe, expect, it } from 'vitest';
import { RETRY_LOG_MAX } from '../../src/providers/constants.ts';
import { ReceiptBuilder } from '../../src/providers/receipt.ts';

describe('ReceiptBuilder', () => {
  it('times retried attempts from the start of the request and sums the time spent queued', () => {
    let now = 1000;
    const builder = new ReceiptBuilder('openai', 'gpt-4o', undefined, () => now);
    now = 1250;
    builder.addRetry({ code: 'rate_limited', status: 429, delayMs: 2000 });
    builder.addQueued(40);
    builder.addQueued(2.6);
    builder.addRequest(3000);
    expect(builder.build()).toMatchObject({
      retries: 1,
      retryLog: [{ atMs: 250, code: 'rate_limited', status: 429, delayMs: 2000 }],
      queuedMs: 43,
    });
  });

  it('leaves retryLog and queuedMs out when nothing was retried or queued', () => {
    const receipt = new ReceiptBuilder('openai', 'gpt-4o', undefined).build();
    expect(receipt).not.toHaveProperty('retryLog');
    expect(receipt).not.toHaveProperty('queuedMs');
  });

  it(`describes at most ${RETRY_LOG_MAX} retries and still counts every one`, () => {
    const builder = new ReceiptBuilder('openai', 'gpt-4o', undefined, () => 0);
    for (let i = 0; i < RETRY_LOG_MAX + 5; i += 1) builder.addRetry({ code: 'server_error', delayMs: 1 });
    const receipt = builder.build();
    expect(receipt.retries).toBe(RETRY_LOG_MAX + 5);
    expect(receipt.retryLog).toHaveLength(RETRY_LOG_MAX);
  });
});
