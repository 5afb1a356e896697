import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { McpConnection } from '../../src/mcp/connection.ts';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    }),
  );
});

/**
 * A Streamable HTTP MCP server in plain JSON-RPC with one tool, `echo`, whose `tools/call`
 * requests `answerCall` answers; `initialized` counts the sessions started.
 */
async function jsonRpcServer(
  answerCall: (res: ServerResponse, reply: (result: unknown) => void) => void,
): Promise<{ url: string; initialized: () => number }> {
  let sessions = 0;
  const server = createServer(async (req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(req.method === 'DELETE' ? 200 : 405).end();
      return;
    }
    let body = '';
    for await (const chunk of req) body += chunk;
    const message = JSON.parse(body) as {
      id?: number;
      method: string;
      params?: { protocolVersion?: string };
    };
    if (message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const reply = (result: unknown): void => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    };
    if (message.method === 'initialize') {
      sessions += 1;
      reply({
        protocolVersion: message.params?.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: 'plain', version: '1' },
      });
    } else if (message.method === 'tools/list') {
      reply({ tools: [{ name: 'echo', inputSchema: { type: 'object' } }] });
    } else {
      answerCall(res, reply);
    }
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    initialized: () => sessions,
  };
}

/**
 * A server whose `tools/call` answers with one server-sent event that never ends (64 KiB every
 * 5 ms); `closed` resolves when the client hangs up on it.
 */
async function endlessEventServer(): Promise<{ url: string; closed: Promise<void> }> {
  let hungUp: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    hungUp = resolve;
  });
  const { url } = await jsonRpcServer((res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: ');
    const chunk = Buffer.alloc(64 * 1024, 'q');
    const timer = setInterval(() => res.write(chunk), 5);
    res.on('close', () => {
      clearInterval(timer);
      hungUp();
    });
  });
  return { url, closed };
}

describe('MCP over Streamable HTTP: one message is bounded like a stdio one', () => {
  it('fails a call whose server-sent event never ends, saying so, and hangs up on the server', async () => {
    const { url, closed } = await endlessEventServer();
    const connection = new McpConnection(
      'endless',
      { type: 'http', url, headers: {} },
      { cwd: '/', maxMessageBytes: 1024 * 1024, callTimeoutMs: 60_000 },
    );
    try {
      expect((await connection.tools()).map((tool) => tool.name)).toEqual(['echo']);
      const error = await connection.call('echo', {}, new AbortController().signal).then(
        () => undefined,
        (thrown: unknown) => thrown as Error & { code?: string },
      );
      expect(error?.code).toBe('mcp_server_died');
      expect(error?.message).toMatch(/message longer than 1048576 bytes/);
      await closed;
    } finally {
      await connection.close();
    }
  });
});

describe('MCP over Streamable HTTP: a JSON answer over the bound', () => {
  it('fails its call naming the bound, and the session goes on', async () => {
    let calls = 0;
    const { url, initialized } = await jsonRpcServer((_res, reply) => {
      calls += 1;
      reply({ content: [{ type: 'text', text: calls === 1 ? 'x'.repeat(2 * 1024 * 1024) : 'small' }] });
    });
    const connection = new McpConnection(
      'big',
      { type: 'http', url, headers: {}, maxMessageBytes: 1024 * 1024 },
      { cwd: '/', callTimeoutMs: 60_000 },
    );
    try {
      await expect(connection.call('echo', {}, new AbortController().signal)).rejects.toMatchObject({
        code: 'mcp_call_failed',
        message: expect.stringContaining(
          'MCP server `big` answered `echo` with a message longer than 1048576 bytes, the most troupe reads',
        ),
        fields: { server: 'big', tool: 'echo', limit: 1024 * 1024 },
      });
      await expect(connection.call('echo', {}, new AbortController().signal)).resolves.toMatchObject({
        content: [{ type: 'text', text: 'small' }],
      });
      expect(initialized()).toBe(1);
      expect(connection.failures).toBe(0);
    } finally {
      await connection.close();
    }
  });
});

describe('MCP over Streamable HTTP: an HTTP error answer', () => {
  it('reports an HTTP 500 to a call as the server answering, not as a server that stopped, and keeps the session', async () => {
    let calls = 0;
    const { url, initialized } = await jsonRpcServer((res, reply) => {
      calls += 1;
      if (calls === 1) res.writeHead(500, { 'content-type': 'text/plain' }).end('database is down');
      else reply({ content: [{ type: 'text', text: 'echoed' }] });
    });
    const connection = new McpConnection('plain', { type: 'http', url, headers: {} }, { cwd: '/' });
    try {
      await connection.tools();
      const error = await connection.call('echo', {}, new AbortController().signal).then(
        () => undefined,
        (thrown: unknown) => thrown as Error & { code?: string; fields?: unknown },
      );
      expect(error?.code).toBe('mcp_call_failed');
      expect(error?.fields).toEqual({ server: 'plain', tool: 'echo', status: 500 });
      expect(error?.message).toMatch(
        /^MCP server `plain` answered `echo` with HTTP 500 \(.*database is down\); the call may or may not have taken effect$/,
      );
      expect(error?.message).not.toMatch(/stopped|restarted/);
      expect(await connection.call('echo', {}, new AbortController().signal)).toMatchObject({
        content: [{ type: 'text', text: 'echoed' }],
      });
      expect(initialized()).toBe(1);
    } finally {
      await connection.close();
    }
  });
});

describe('MCP over Streamable HTTP: notifications', () => {
  it('are bounded in bytes per minute like a stdio server’s: the call in flight fails saying so', async () => {
    // The call is answered with an event stream of 300 KiB notifications, 20 a second, and no
    // result: under the bound per second and per minute in count, only their bytes are too many.
    let stop: () => void = () => {};
    const { url } = await jsonRpcServer((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const data = 'n'.repeat(300 * 1024);
      const event = `event: message\ndata: ${JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/message',
        params: { level: 'info', data },
      })}\n\n`;
      const timer = setInterval(() => res.write(event), 50);
      stop = () => clearInterval(timer);
      res.on('close', stop);
    });
    const connection = new McpConnection(
      'chatty',
      { type: 'http', url, headers: {} },
      {
        cwd: '/',
        maxMessageBytes: 1024 * 1024,
        maxNotificationBytesPerMinute: 2 * 1024 * 1024,
        callTimeoutMs: 20_000,
      },
    );
    try {
      const error = await connection.call('echo', {}, new AbortController().signal).then(
        () => undefined,
        (thrown: unknown) => thrown as Error & { code?: string },
      );
      // It waited out the call's time limit (mcp_timeout), reading every notification.
      expect(error?.code).toBe('mcp_server_died');
      expect(error?.message).toContain('it sent more than 2097152 bytes of notifications in one minute');
    } finally {
      stop();
      await connection.close();
    }
  });

  it('are counted in UTF-8 bytes, not characters', async () => {
    // 10 notifications of 4,000 `é`s and no result: some 41,000 characters, under the 64 KiB
    // bound, but some 81,000 bytes. Counted in characters, the call waited out its time limit.
    let stop: () => void = () => {};
    const { url } = await jsonRpcServer((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const data = 'é'.repeat(4000);
      const notification = JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/message',
        params: { level: 'info', data },
      });
      for (let n = 0; n < 10; n += 1) res.write(`event: message\ndata: ${notification}\n\n`);
      stop = () => res.end();
    });
    const connection = new McpConnection(
      'wide',
      { type: 'http', url, headers: {} },
      { cwd: '/', maxNotificationBytesPerMinute: 64 * 1024, callTimeoutMs: 10_000 },
    );
    try {
      const error = await connection.call('echo', {}, new AbortController().signal).then(
        () => undefined,
        (thrown: unknown) => thrown as Error & { code?: string },
      );
      expect(error?.code).toBe('mcp_server_died');
      expect(error?.message).toContain('it sent more than 65536 bytes of notifications in one minute');
    } finally {
      stop();
      await connection.close();
    }
  });
});
