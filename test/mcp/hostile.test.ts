import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sleep } from '../../src/abort.ts';
import type { McpServerConfig } from '../../src/mcp/config.ts';
import { McpConnection } from '../../src/mcp/connection.ts';
import { McpPool } from '../../src/mcp/pool.ts';
import { LineReadBuffer, MESSAGE_TOO_LONG_CODE } from '../../src/mcp/read-buffer.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import type { Tool } from '../../src/tools/types.ts';
import { mcpFixtures, scratch } from './helpers.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** test/fixtures/mcp/hostile.mjs in `mode`. */
function hostile(mode: string, ...args: string[]): McpServerConfig {
  return {
    type: 'stdio',
    command: process.execPath,
    args: [path.join(mcpFixtures, 'hostile.mjs'), mode, ...args],
    env: {},
  };
}

function pool(options: Partial<ConstructorParameters<typeof McpPool>[0]> = {}): McpPool {
  const { dir, cleanup } = scratch();
  const created = new McpPool({ cwd: dir, restartBaseDelayMs: 20, ...options });
  cleanups.push(cleanup, () => created.close());
  return created;
}

const ctx = () => ({ signal: new AbortController().signal, cwd: '/', agentId: 'a', fitsState: () => true });
const byName = (tools: readonly Tool[], name: string): Tool => {
  const tool = tools.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool ${name} in ${tools.map((t) => t.name).join(', ')}`);
  return tool;
};

describe('a hostile MCP server over stdio', () => {
  it('that never answers `initialize`, or never lists its tools, is a problem saying which', async () => {
    // Each limit short only where it is the one tested: a loaded machine can take over 500 ms to
    // start a server that does answer `initialize`.
    const silent = await pool({ connectTimeoutMs: 500 }).toolsFor({ silent: hostile('silent') });
    const mute = await pool({ connectTimeoutMs: 60_000, listTimeoutMs: 500 }).toolsFor({
      mute: hostile('no-list'),
    });
    expect([...silent.tools, ...mute.tools]).toEqual([]);
    expect(silent.problems).toEqual([
      { server: 'silent', message: expect.stringContaining('it did not answer `initialize` within 500 ms') },
    ]);
    expect(mute.problems).toEqual([
      {
        server: 'mute',
        message: expect.stringContaining(
          'it answered `initialize` but did not list its tools (`tools/list`) within 500 ms',
        ),
      },
    ]);
  });

  it('does not read tools past the 500 it takes: a malformed one there does not lose the server', async () => {
    const { tools, problems, notices } = await pool().toolsFor({
      many: hostile('tools', '2000', 'broken-last'),
    });
    expect(problems).toEqual([]);
    expect(tools).toHaveLength(500);
    expect(notices).toEqual([
      {
        server: 'many',
        message: expect.stringContaining('lists more tools than troupe takes from one server'),
      },
    ]);
  });

  it('whose tool listing is over the message bound is unavailable, saying so', async () => {
    const { problems } = await pool({ maxMessageBytes: 64 * 1024 }).toolsFor({
      many: hostile('tools', '2000'),
    });
    expect(problems).toEqual([
      {
        server: 'many',
        message: expect.stringContaining(
          'it could not be started: MCP error -32603: the answer is longer than 65536 bytes, the most troupe reads from one message',
        ),
      },
    ]);
  });

  it('keeps every tool when one output schema does not compile or is over the bound; each is called', async () => {
    const { tools, problems } = await pool().toolsFor({ out: hostile('output-schema') });
    expect(problems).toEqual([]);
    for (const name of ['ok', 'bad', 'wide']) {
      const result = await byName(tools, `mcp__out__${name}`).execute({}, ctx());
      expect(result).toMatchObject({ ok: true, text: `called ${name}`, data: { a: 1 } });
    }
  });

  it("checks each server's schemas against its own definitions when their `$id`s are the same", async () => {
    const mcp = pool();
    const servers = { s: hostile('id-schema', 'string'), n: hostile('id-schema', 'number') };
    // The second listing is what the next agent on the thread gets.
    for (const _agent of [1, 2]) {
      const { tools, problems } = await mcp.toolsFor(servers);
      expect(problems).toEqual([]);
      const registry = new ToolRegistry();
      for (const tool of tools) registry.register(tool);
      const s = registry.validator('mcp__s__typed');
      const n = registry.validator('mcp__n__typed');
      expect(s?.({ n: 'x' })).toEqual([]);
      expect(s?.({ n: 1 })).toMatchObject([{ path: '/n', message: 'must be string' }]);
      expect(n?.({ n: 1 })).toEqual([]);
      expect(n?.({ n: 'x' })).toMatchObject([{ path: '/n', message: 'must be number' }]);
      // Both answer `{ n: "x" }`: `s`'s output schema takes it, `n`'s does not.
      const fits = await byName(tools, 'mcp__s__typed').execute({ n: 'x' }, ctx());
      expect(fits).toMatchObject({ ok: true, data: { n: 'x' } });
      const misfits = await byName(tools, 'mcp__n__typed').execute({ n: 1 }, ctx());
      expect(misfits.ok).toBe(false);
      expect(misfits.text).toContain("does not match the tool's output schema");
    }
  });

  it("gives the thread's next agent the schemas already compiled, not new ones to compile and keep", async () => {
    const mcp = pool();
    const servers = { p: hostile('named', 'a,b') };
    const first = await mcp.toolsFor(servers);
    const next = await mcp.toolsFor(servers);
    expect(next.tools.map((tool) => tool.parameters)).toEqual(first.tools.map((tool) => tool.parameters));
    next.tools.forEach((tool, index) => {
      expect(tool.parameters).toBe(first.tools[index]?.parameters);
    });
  });

  it('answers a result that is not valid MCP as the server refusing the call, not as a death', async () => {
    const connection = new McpConnection('img', hostile('image', '1'), { cwd: '/', restartBaseDelayMs: 20 });
    cleanups.push(() => connection.close());
    await connection.tools();
    const pid = connection.pid;
    const call = connection.call('img', {}, new AbortController().signal);
    await expect(call).rejects.toMatchObject({
      code: 'mcp_call_failed',
      message:
        'MCP server `img` answered `img` with a result that is not valid MCP: content.0.data: Invalid Base64 string',
    });
    expect(connection.failures).toBe(0);
    expect(connection.pid).toBe(pid);
    await expect(connection.call('echo', { x: 1 }, new AbortController().signal)).resolves.toMatchObject({
      content: [{ type: 'text', text: '{"x":1}' }],
    });
  });

  it('that floods notifications is cut off: at the start, and during a call', async () => {
    const mcp = pool({ maxNotificationsPerSecond: 200, callTimeoutMs: 5000 });
    const start = await mcp.toolsFor({ loud: hostile('notify-flood') });
    expect(start.problems).toEqual([
      {
        server: 'loud',
        message: expect.stringContaining(
          'it sent more than 200 notifications in one second, the most troupe reads, so troupe closed the connection',
        ),
      },
    ]);
    const { tools } = await mcp.toolsFor({ later: hostile('call-flood') });
    const result = await byName(tools, 'mcp__later__echo').execute({}, ctx());
    expect(result.ok).toBe(false);
    expect(result.text).toContain(
      'MCP server `later` stopped during the call to `echo` (it sent more than 200',
    );
  });

  it('that keeps notifying under the bound per second is cut off by the bound per minute', async () => {
    const mcp = pool({ maxNotificationsPerMinute: 300, callTimeoutMs: 5000 });
    const { tools } = await mcp.toolsFor({ chatty: hostile('call-notify', '500') });
    const result = await byName(tools, 'mcp__chatty__echo').execute({}, ctx());
    expect(result.ok).toBe(false);
    expect(result.text).toContain(
      'MCP server `chatty` stopped during the call to `echo` (it sent more than 300 notifications in one minute, ' +
        'the most troupe reads, so troupe closed the connection)',
    );
    // Within the bounds the same server answers.
    const { tools: calm } = await pool().toolsFor({ calm: hostile('call-notify', '500') });
    expect(await byName(calm, 'mcp__calm__echo').execute({ a: 1 }, ctx())).toMatchObject({
      ok: true,
      text: '{"a":1}',
    });
  });

  it("offers a tool name once when two servers' tools come out the same (`a`'s `b__c`, `a__b`'s `c`)", async () => {
    const { tools, notices, problems } = await pool().toolsFor({
      p: hostile('named', 'q__echo,other'),
      p__q: hostile('named', 'echo'),
    });
    expect(problems).toEqual([]);
    expect(tools.map((tool) => tool.name)).toEqual(['mcp__p__q__echo', 'mcp__p__other']);
    expect(notices).toEqual([
      {
        server: 'p__q',
        message:
          "MCP server `p__q`: 1 tool(s) not offered, their names being those of another server's tools: " +
          "`mcp__p__q__echo` (server `p`'s)",
      },
    ]);
    const result = await byName(tools, 'mcp__p__q__echo').execute({ from: 'p' }, ctx());
    expect(result).toMatchObject({ ok: true, text: '{"from":"p"}' });
  });

  it('that sends one line without end is closed past the line bound, failing the call in flight now', async () => {
    // A line is read past up to 8 × maxMessageBytes, at least 64 MiB; the call waited out its 600 s.
    const mcp = pool({ maxMessageBytes: 64 * 1024, callTimeoutMs: 120_000 });
    const { tools } = await mcp.toolsFor({ endless: hostile('endless-line') });
    const result = await byName(tools, 'mcp__endless__echo').execute({}, ctx());
    expect(result.ok).toBe(false);
    expect(result.text).toContain(
      'MCP server `endless` stopped during the call to `echo` (it sent a line of over 67108864 bytes without ' +
        'ending it (8 × maxMessageBytes, at least 64 MiB, is the most troupe reads past), so its messages could ' +
        'no longer be told apart and troupe closed the connection)',
    );
  });

  it('fails a call with its answer over the bound, not as a death, when the line bound is passed in the same read', async () => {
    // The answer is refused at 1 KiB and the line bound passed at 8 KiB, in one read of 32 KiB:
    // the refusal was dropped with the buffer, and the call failed as the server dying.
    const mcp = pool({ maxMessageBytes: 1024, maxLineBytes: 8 * 1024, callTimeoutMs: 120_000 });
    const { tools } = await mcp.toolsFor({ big: hostile('refused-endless') });
    const result = await byName(tools, 'mcp__big__echo').execute({}, ctx());
    expect(result.ok).toBe(false);
    expect(result.text).toContain(
      'MCP server `big` answered `echo` with a message longer than 1024 bytes, the most troupe reads from one message',
    );
  });

  it('counts the notifications over the message bound it drops against the bytes per minute', async () => {
    // 100 KiB notifications over a 16 KiB bound were read past uncounted: the call waited out its
    // time limit (mcp_timeout) while the server sent them for as long as it liked.
    const mcp = pool({
      maxMessageBytes: 16 * 1024,
      maxNotificationBytesPerMinute: 1024 * 1024,
      callTimeoutMs: 20_000,
    });
    const { tools } = await mcp.toolsFor({ loud: hostile('big-notify', '100') });
    const result = await byName(tools, 'mcp__loud__echo').execute({}, ctx());
    expect(result.ok).toBe(false);
    expect(result.text).toContain(
      'MCP server `loud` stopped during the call to `echo` (it sent more than 1048576 bytes of notifications in one minute',
    );
  });

  it('counts the bytes of notifications in UTF-8, not in characters', async () => {
    // 10 notifications of 4,000 `é`s: some 41,000 characters, under the 64 KiB bound, but some
    // 81,000 bytes. Counted in characters, the call was answered.
    const mcp = pool({ maxNotificationBytesPerMinute: 64 * 1024, callTimeoutMs: 20_000 });
    const { tools } = await mcp.toolsFor({ wide: hostile('wide-notify', '4000') });
    const result = await byName(tools, 'mcp__wide__echo').execute({}, ctx());
    expect(result.ok).toBe(false);
    expect(result.text).toContain(
      'MCP server `wide` stopped during the call to `echo` (it sent more than 65536 bytes of notifications in one minute',
    );
  });

  it('answers a request of the server over the bound with an error, so the server does not wait', async () => {
    const mcp = pool({ maxMessageBytes: 16 * 1024, callTimeoutMs: 120_000 });
    const { tools } = await mcp.toolsFor({ asks: hostile('big-request', '100') });
    const result = await byName(tools, 'mcp__asks__echo').execute({}, ctx());
    expect(result.ok).toBe(true);
    expect(JSON.parse(result.text)).toEqual({
      jsonrpc: '2.0',
      id: 's1',
      error: {
        code: MESSAGE_TOO_LONG_CODE,
        message:
          'the request is longer than 16384 bytes, the most troupe reads from one message; it was not read',
        data: { troupe: 'message_too_long', limit: 16384 },
      },
    });
  });

  it('reads a long result in linear time: its bytes are joined once, not once per chunk', async () => {
    const bytes = 6 * 1024 * 1024;
    const big: McpServerConfig = {
      type: 'stdio',
      command: process.execPath,
      args: [path.join(mcpFixtures, 'big-result.mjs')],
      env: {},
    };
    const { tools } = await pool().toolsFor({ big });
    const concat = vi.spyOn(Buffer, 'concat');
    const result = await byName(tools, 'mcp__big__big').execute({ bytes }, ctx());
    expect(result.ok).toBe(true);
    const copied = concat.mock.results.reduce(
      (sum, { value }) => sum + (Buffer.isBuffer(value) ? value.length : 0),
      0,
    );
    // The SDK's own buffer copied ~n²/(2 × 64 KiB) bytes: 288 MB for these 6 MB.
    expect(copied).toBeLessThan(2 * bytes);
  });
});

describe('a server given up on', () => {
  it('is tried again once the longest backoff has passed since its last failure', async () => {
    const { dir, cleanup } = scratch();
    cleanups.push(cleanup);
    const upFile = path.join(dir, 'up');
    const config = { ...hostile('named', 'echo'), env: { TROUPE_TEST_UP_FILE: upFile } };
    const connection = new McpConnection('down', config, {
      cwd: dir,
      maxRestarts: 2,
      restartBaseDelayMs: 1,
      restartMaxDelayMs: 200,
    });
    cleanups.push(() => connection.close());
    await expect(connection.tools()).rejects.toMatchObject({ code: 'mcp_unavailable' });
    await expect(connection.tools()).rejects.toMatchObject({ code: 'mcp_unavailable' });
    await expect(connection.tools()).rejects.toThrow(
      /it failed 2 times in a row \(last: .*\); it is tried again 200 ms after its last failure/,
    );
    expect(connection.status).toBe('failed');
    writeFileSync(upFile, '');
    await sleep(300);
    expect((await connection.tools()).map((tool) => tool.name)).toEqual(['echo']);
    expect(connection.status).toBe('ready');
  });
});

describe('LineReadBuffer', () => {
  it('splits messages across and within chunks, drops a CR before the newline, and bounds one message', () => {
    const buffer = new LineReadBuffer(16, (line) => JSON.parse(line) as unknown);
    buffer.append(Buffer.from('{"a":'));
    expect(buffer.readMessage()).toBeNull();
    buffer.append(Buffer.from('1}\r\n{"b":2}\nnot json\n{"c"'));
    expect(buffer.readMessage()).toEqual({ a: 1 });
    expect(buffer.readMessage()).toEqual({ b: 2 });
    expect(() => buffer.readMessage()).toThrow(SyntaxError);
    expect(buffer.readMessage()).toBeNull();
    buffer.append(Buffer.from(':3}\n'));
    expect(buffer.readMessage()).toEqual({ c: 3 });
    buffer.append(Buffer.from('x'.repeat(17)));
    expect(buffer.readMessage()).toBeNull();
    buffer.append(Buffer.from('x\n{"d":4}\n'));
    expect(buffer.readMessage()).toEqual({ d: 4 });
  });

  const refusal = (id: string | number, limit: number) => ({
    jsonrpc: '2.0',
    id,
    error: {
      code: MESSAGE_TOO_LONG_CODE,
      message: expect.stringContaining(`the answer is longer than ${limit} bytes`),
      data: { troupe: 'message_too_long', limit },
    },
  });

  it('answers an answer over the bound with an error to its id as soon as the bound is passed', () => {
    const buffer = new LineReadBuffer(80, (line) => JSON.parse(line) as unknown, { maxLineBytes: 1_000_000 });
    buffer.append(Buffer.from('{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"'));
    expect(buffer.readMessage()).toBeNull();
    // Past the bound, before the newline: the call fails now, not when the rest has come.
    buffer.append(Buffer.from('A'.repeat(100)));
    expect(buffer.readMessage()).toEqual(refusal(7, 80));
    for (let i = 0; i < 10; i += 1) buffer.append(Buffer.from('A\\"'.repeat(1000)));
    buffer.append(Buffer.from('"}]}}\n{"jsonrpc":"2.0","id":8,"result":{}}\n'));
    expect(buffer.readMessage()).toEqual({ jsonrpc: '2.0', id: 8, result: {} });
    expect(buffer.readMessage()).toBeNull();
  });

  it('finds the id of an answer after its result, drops a notification, has a request answered', () => {
    const requests: (string | number)[] = [];
    const buffer = new LineReadBuffer(64, (line) => JSON.parse(line) as unknown, {
      onRequestTooLong: (id) => requests.push(id),
    });
    const long = 'x'.repeat(200);
    buffer.append(
      Buffer.from(`{"result":{"a":"${long}","id":1,"b":[{"id":2}]},"jsonrpc":"2.0","id":"a\\"b"}\n`),
    );
    expect(buffer.readMessage()).toEqual(refusal('a"b', 64));
    buffer.append(
      Buffer.from(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"${long}"}}\n`),
    );
    buffer.append(
      Buffer.from(`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"x":"${long}"}}\n`),
    );
    // A request's id may come after its params (the SDK writes it last).
    buffer.append(Buffer.from(`{"method":"elicitation/create","params":{"x":"${long}"},"id":"e"}\n`));
    buffer.append(Buffer.from(`not json at all ${long}\n`));
    expect(buffer.readMessage()).toBeNull();
    expect(requests).toEqual([3, 'e']);
    buffer.append(Buffer.from('{"id":4,"result":{}}\n'));
    expect(buffer.readMessage()).toEqual({ id: 4, result: {} });
    // An escaped quote split between two chunks does not end the string (the quote after it does).
    buffer.append(Buffer.from(`{"result":"${long}\\`));
    buffer.append(Buffer.from('"","id":5}\n'));
    expect(buffer.readMessage()).toEqual(refusal(5, 64));
  });

  it('stops, saying so, when a line read past runs beyond its bound, with or without an id', () => {
    for (const [start, refused] of [
      ['{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"', null],
      ['{"id":1,"result":"', refusal(1, 64)],
    ] as const) {
      const lost: number[] = [];
      const buffer = new LineReadBuffer(64, (line) => JSON.parse(line) as unknown, {
        maxLineBytes: 1000,
        onFramingLost: (bytes) => lost.push(bytes),
      });
      buffer.append(Buffer.from(start));
      for (let i = 0; i < 9; i += 1) buffer.append(Buffer.from('A'.repeat(100)));
      expect(lost).toEqual([]);
      buffer.append(Buffer.from('A'.repeat(100)));
      expect(lost).toEqual([start.length + 1000]);
      // Nothing more is read: the connection is being closed. An answer refused before is still
      // read, for its call to fail saying why.
      buffer.append(Buffer.from('{"id":3,"result":{}}\n'));
      const read = [buffer.readMessage(), buffer.readMessage()];
      expect(read).toEqual([refused, null]);
    }
  });

  it('keeps an answer refused in the same chunk as the line bound is passed, for its call', () => {
    const lost: number[] = [];
    const buffer = new LineReadBuffer(64, (line) => JSON.parse(line) as unknown, {
      maxLineBytes: 1000,
      onFramingLost: (bytes) => lost.push(bytes),
    });
    buffer.append(Buffer.from(`{"id":9,"result":"${'A'.repeat(2000)}`));
    expect(lost).toEqual([2000 + 18]);
    expect(buffer.readMessage()).toEqual(refusal(9, 64));
    expect(buffer.readMessage()).toBeNull();
  });

  it('bounds a line read past to 8 times the message bound, at least 64 MiB, by default', () => {
    const mib = Buffer.alloc(1024 * 1024, 'A');
    for (const [maxBytes, bound] of [
      [100, 64 * 1024 * 1024],
      [10 * 1024 * 1024, 80 * 1024 * 1024],
    ] as const) {
      const lost: number[] = [];
      const buffer = new LineReadBuffer(maxBytes, (line) => JSON.parse(line) as unknown, {
        onFramingLost: (bytes) => lost.push(bytes),
      });
      buffer.append(Buffer.from('"'));
      for (let read = 1; read + mib.length <= bound; read += mib.length) buffer.append(mib);
      buffer.append(mib.subarray(0, mib.length - 1));
      expect(lost).toEqual([]);
      buffer.append(Buffer.from('A'));
      expect(lost).toEqual([bound + 1]);
    }
  });
});
