import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { McpPool } from '../../src/mcp/pool.ts';
import type { Tool } from '../../src/tools/types.ts';
import {
  type HttpEverything,
  httpEverything,
  mcpFixtures,
  pids,
  scratch,
  stdioEverything,
} from './helpers.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function setup() {
  const { dir, cleanup } = scratch();
  const pool = new McpPool({ cwd: dir, restartBaseDelayMs: 20 });
  cleanups.push(cleanup, () => pool.close());
  return { dir, pool, pidFile: path.join(dir, 'pids') };
}

const ctx = () => ({ signal: new AbortController().signal, cwd: '/', agentId: 'a', fitsState: () => true });
const byName = (tools: readonly Tool[], name: string): Tool => {
  const tool = tools.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool ${name} in ${tools.map((t) => t.name).join(', ')}`);
  return tool;
};

describe('MCP pool against @modelcontextprotocol/server-everything', () => {
  it('lists and calls tools over stdio, named mcp__<server>__<tool>', async () => {
    const { pool, pidFile } = setup();
    const { tools, problems } = await pool.toolsFor({ everything: stdioEverything(pidFile) });
    expect(problems).toEqual([]);
    const names = tools.map((tool) => tool.name);
    expect(names).toContain('mcp__everything__echo');
    expect(names).toContain('mcp__everything__get-sum');
    expect(byName(tools, 'mcp__everything__get-sum').parameters).toMatchObject({ required: ['a', 'b'] });
    expect(await byName(tools, 'mcp__everything__echo').execute({ message: 'hi' }, ctx())).toEqual({
      ok: true,
      text: 'Echo: hi',
    });
    expect((await pool.states())[0]).toMatchObject({ name: 'everything', type: 'stdio', status: 'ready' });
  });

  it('lists and calls tools over Streamable HTTP on 127.0.0.1', async () => {
    const { pool } = setup();
    const server = await httpEverything();
    cleanups.push(() => server.stop());
    const { tools, problems } = await pool.toolsFor({ web: { type: 'http', url: server.url, headers: {} } });
    expect(problems).toEqual([]);
    const sum = await byName(tools, 'mcp__web__get-sum').execute({ a: 2, b: 3 }, ctx());
    expect(sum).toMatchObject({ ok: true, text: 'The sum of 2 and 3 is 5.' });
  });

  it('fails a call cut by a server death with a clear error, then restarts the server for the next', async () => {
    const { pool, pidFile } = setup();
    const { tools } = await pool.toolsFor({ everything: stdioEverything(pidFile) });
    const first = pids(pidFile);
    expect(first).toHaveLength(1);
    const long = byName(tools, 'mcp__everything__trigger-long-running-operation').execute(
      { duration: 120, steps: 2 },
      ctx(),
    );
    process.kill(first[0] ?? 0, 'SIGKILL');
    const cut = await long;
    expect(cut.ok).toBe(false);
    expect(cut.text).toMatch(
      /^MCP server `everything` stopped during the call to `trigger-long-running-operation`/,
    );
    expect(cut.text).toContain('may or may not have taken effect');

    const again = await byName(tools, 'mcp__everything__echo').execute({ message: 'back' }, ctx());
    expect(again).toEqual({ ok: true, text: 'Echo: back' });
    expect(pids(pidFile)).toHaveLength(2);
  });

  it('restarts an HTTP server connection after the server came back on its port', async () => {
    const { pool } = setup();
    let server: HttpEverything = await httpEverything();
    cleanups.push(() => server.stop());
    const config = { type: 'http' as const, url: server.url, headers: {} };
    const { tools } = await pool.toolsFor({ web: config });
    const echo = byName(tools, 'mcp__web__echo');
    expect((await echo.execute({ message: 'one' }, ctx())).ok).toBe(true);
    await server.stop();
    const down = await echo.execute({ message: 'two' }, ctx());
    expect(down.ok).toBe(false);
    expect(down.text).toMatch(/MCP server `web`/);
    server = await httpEverything(server.port);
    expect(await echo.execute({ message: 'three' }, ctx())).toEqual({ ok: true, text: 'Echo: three' });
  });

  it('reports a server that cannot start as a problem, not as tools or a throw', async () => {
    const { pool, dir } = setup();
    const { tools, problems } = await pool.toolsFor({
      broken: { type: 'stdio', command: path.join(dir, 'no-such-program'), args: [], env: {} },
    });
    expect(tools).toEqual([]);
    expect(problems).toHaveLength(1);
    expect(problems[0]?.message).toMatch(/^MCP server `broken` is not available: it could not be started/);
  });

  it('says why an HTTP server could not be reached: the refused connection, an error page as text and cut', async () => {
    const { pool } = setup();
    const page = `<!DOCTYPE html><html><head><style>body{}</style></head><body><pre>Cannot POST /nope</pre>${'<p>filler</p>'.repeat(200)}</body></html>`;
    const server = createServer((_request, response) => {
      response.writeHead(404, { 'content-type': 'text/html' }).end(page);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    const { problems } = await pool.toolsFor({
      page: { type: 'http', url: `http://127.0.0.1:${port}/nope`, headers: {} },
      refused: { type: 'http', url: `http://127.0.0.1:${closedPort}/mcp`, headers: {} },
    });
    const byServer = (name: string): string =>
      problems.find((p) => p.message.includes(`\`${name}\``))?.message ?? '';
    expect(byServer('page')).toContain('Cannot POST /nope');
    expect(byServer('page')).not.toMatch(/<pre>|<!DOCTYPE|body\{/);
    expect(byServer('page')).toContain('… (cut)');
    expect(byServer('refused')).toContain('ECONNREFUSED');
  });

  it('says which tools it does not offer: beyond 500 per server, and names taken by an earlier tool', async () => {
    const { pool } = setup();
    const many = (count: number) => ({
      type: 'stdio' as const,
      command: process.execPath,
      args: [path.join(mcpFixtures, 'many-tools.mjs'), String(count)],
      env: {},
    });
    const { tools, notices } = await pool.toolsFor({ many: many(600), few: many(3) });
    const ofServer = (server: string) => tools.filter((tool) => tool.name.startsWith(`mcp__${server}__`));
    expect(ofServer('many')).toHaveLength(499);
    expect(ofServer('few').map((tool) => tool.name)).toEqual([
      'mcp__few__a_b',
      'mcp__few__t0',
      'mcp__few__t1',
      'mcp__few__t2',
    ]);
    expect(await byName(tools, 'mcp__few__a_b').execute({}, ctx())).toEqual({ ok: true, text: 'called a.b' });
    expect(notices.filter((n) => n.server === 'many').map((n) => n.message)).toEqual([
      expect.stringContaining('lists more tools than troupe takes from one server (500'),
      expect.stringContaining("`a_b` (its name `mcp__many__a_b` is `a.b`'s)"),
    ]);
    expect(notices.filter((n) => n.server === 'few')).toHaveLength(1);
  });

  it("drops a tool whose input schema is over the bound, and the tools past the server's bound; the rest work", async () => {
    const { pool } = setup();
    const big = {
      type: 'stdio' as const,
      command: process.execPath,
      args: [path.join(mcpFixtures, 'big-schemas.mjs')],
      env: {},
    };
    const { tools, notices, problems } = await pool.toolsFor({ big });
    expect(problems).toEqual([]);
    // 240 KiB each: eight fit in 2 MiB, with `small`.
    expect(tools.map((tool) => tool.name)).toEqual([
      'mcp__big__small',
      ...Array.from({ length: 8 }, (_, i) => `mcp__big__w${i}`),
    ]);
    expect(await byName(tools, 'mcp__big__w0').execute({ text: 'hi' }, ctx())).toEqual({
      ok: true,
      text: 'called w0',
    });
    expect(notices.map((notice) => notice.message)).toEqual([
      expect.stringMatching(
        /^MCP server `big`: 1 tool\(s\) not offered, their input schema being longer than the 262144 bytes troupe takes for one tool: `huge` \(3\d{5} bytes\)$/,
      ),
      expect.stringMatching(
        /^MCP server `big`: 2 tool\(s\) not offered, .* past the 2097152 bytes troupe takes from one server: `w8`, `w9`$/,
      ),
    ]);
    expect(notices.every((notice) => notice.server === 'big')).toBe(true);
  });

  it('fails a call whose stdio answer is over the bound, keeping the server; its settings can raise the bound', async () => {
    const { dir, cleanup } = scratch();
    cleanups.push(cleanup);
    const big = {
      type: 'stdio' as const,
      command: process.execPath,
      args: [path.join(mcpFixtures, 'big-result.mjs')],
      env: {},
    };
    const pool = new McpPool({ cwd: dir, restartBaseDelayMs: 20, maxMessageBytes: 64 * 1024 });
    cleanups.push(() => pool.close());
    const { tools } = await pool.toolsFor({ big });
    const pid = pool.connection('big', big).pid;
    // The SDK's servers write the id after the result: it is found at the end of the line.
    const over = await byName(tools, 'mcp__big__big').execute({ bytes: 1024 * 1024 }, ctx());
    expect(over).toMatchObject({
      ok: false,
      text:
        'MCP server `big` answered `big` with a message longer than 65536 bytes, the most troupe reads ' +
        "from one message; the answer was not read. Raise `maxMessageBytes` in the server's settings to read longer answers.",
    });
    // Not a crash: the same server answers the next call.
    const next = await byName(tools, 'mcp__big__big').execute({ bytes: 10 }, ctx());
    expect(next).toMatchObject({ ok: true, text: 'AAAAAAAAAA' });
    expect(pool.connection('big', big).pid).toBe(pid);
    expect(pool.connection('big', big).failures).toBe(0);

    const raised = await pool.toolsFor({ big: { ...big, maxMessageBytes: 2 * 1024 * 1024 } });
    const read = await byName(raised.tools, 'mcp__big__big').execute({ bytes: 1024 * 1024 }, ctx());
    expect(read.ok).toBe(true);
    expect(read.text).toMatch(/^A{100000}\n\[\d+ more characters of the result were cut\]$/);
  });
});
