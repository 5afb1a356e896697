import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { StdioTransport } from '../../src/mcp/stdio-transport.ts';

/** A node child running `source`, read with a 64-byte message bound and a 1000-byte line bound. */
function transport(source: string, onFramingLost?: (bytes: number) => void): StdioTransport {
  return new StdioTransport({
    command: process.execPath,
    args: ['-e', source],
    env: {},
    cwd: process.cwd(),
    maxMessageBytes: 64,
    maxLineBytes: 1000,
    parse: (line) => JSON.parse(line) as JSONRPCMessage,
    closeGraceMs: 50,
    ...(onFramingLost ? { onFramingLost } : {}),
  });
}

describe('StdioTransport', () => {
  it('passes on the messages read before a line runs past its bound, then says the framing is lost', async () => {
    const events: unknown[] = [];
    // One write: answer 1, then answer 2 over the message bound (its id first) running past the
    // line bound, all in one read.
    const source = `process.stdout.write('{"jsonrpc":"2.0","id":1,"result":{}}\\n{"jsonrpc":"2.0","id":2,"result":"' + 'A'.repeat(3000)); setInterval(() => {}, 1000);`;
    let resolveClosed: () => void = () => {};
    const closed = new Promise<void>((resolve) => {
      resolveClosed = resolve;
    });
    const t = transport(source, (bytes) => {
      events.push({ lost: bytes });
      void t.close().then(resolveClosed);
    });
    t.onmessage = (message) => events.push((message as { id?: unknown }).id);
    await t.start();
    await closed;
    // Answer 1, then the refusal of answer 2 (its id came before the bound), then the lost line.
    expect(events).toEqual([1, 2, { lost: expect.any(Number) }]);
  });

  it('kills a server that ignores its stdin closing and SIGTERM, and tells it closed', async () => {
    const t = transport(
      `process.on('SIGTERM', () => {}); process.stdin.on('end', () => {}); process.stdout.write('{"jsonrpc":"2.0","method":"up"}\\n'); setInterval(() => {}, 1000);`,
    );
    const up = new Promise<void>((resolve) => {
      t.onmessage = () => resolve();
    });
    const closed = new Promise<void>((resolve) => {
      t.onclose = resolve;
    });
    await t.start();
    expect(t.pid).toBeGreaterThan(0);
    await up;
    await t.close();
    await closed;
    expect(t.pid).toBeUndefined();
    await expect(t.send({ jsonrpc: '2.0', method: 'x' })).rejects.toThrow('Not connected');
  });

  it('rejects its start when the command cannot be spawned', async () => {
    const t = new StdioTransport({
      command: '/nonexistent/troupe-mcp-server',
      args: [],
      env: {},
      cwd: process.cwd(),
      maxMessageBytes: 64,
      parse: (line) => JSON.parse(line) as JSONRPCMessage,
    });
    await expect(t.start()).rejects.toThrow('ENOENT');
  });
});
