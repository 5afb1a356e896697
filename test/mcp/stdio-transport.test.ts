import { spawnSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { StdioTransport } from '../../src/mcp/stdio-transport.ts';
import { tempDir } from '../fixtures/temp-dirs.ts';

const win32Spawn = fileURLToPath(new URL('../fixtures/mcp/win32-spawn.ts', import.meta.url));
/** The process listing a close on Windows records a server's tree with. */
const listing = {
  command: 'C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe',
  args: [
    '-NoProfile',
    '-NonInteractive',
    '-Command',
    'Get-CimInstance Win32_Process | ForEach-Object { "$($_.ProcessId) $($_.ParentProcessId)" }',
  ],
  shell: false,
};

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

  it('starts a .cmd shim found on PATH (npx) on Windows through cmd.exe, its arguments escaped', () => {
    const shims = tempDir('troupe-mcp-shims-');
    writeFileSync(path.join(shims, 'npx.cmd'), '@echo off\r\n');
    const child = spawnSync(process.execPath, ['--import', 'tsx', win32Spawn, shims], { encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(0);
    // Node >= 20.12 refuses to spawn a .cmd without a shell (EINVAL): it has to be cmd.exe's.
    expect(JSON.parse(child.stdout)).toEqual([
      {
        command: 'cmd.exe',
        args: ['/d', '/s', '/c', '"npx ^"-y^" ^"@scope/server^" ^"a^ b^" ^"say^ \\^"hi\\^"^""'],
        shell: false,
        windowsVerbatimArguments: true,
      },
    ]);
  });

  it('closes a server started on Windows by ending its process tree, not only cmd.exe', () => {
    const shims = tempDir('troupe-mcp-shims-');
    writeFileSync(path.join(shims, 'npx.cmd'), '@echo off\r\n');
    const child = spawnSync(process.execPath, ['--import', 'tsx', win32Spawn, shims, 'close'], {
      encoding: 'utf8',
    });
    expect(child.status, child.stderr).toBe(0);
    // SIGTERM and SIGKILL reached cmd.exe only: the server a shim ran under it, ignoring the end of
    // its stdin, was left running.
    const taskkill = 'C:\\Windows\\System32\\taskkill.exe';
    expect(JSON.parse(child.stdout).slice(1)).toEqual([
      listing,
      { command: taskkill, args: ['/pid', '4321', '/T'], shell: false },
      { command: taskkill, args: ['/pid', '4321', '/T', '/F'], shell: false },
    ]);
  });

  it('forces the recorded tree of a server whose cmd.exe exits on the first taskkill, by its ids', () => {
    const shims = tempDir('troupe-mcp-shims-');
    writeFileSync(path.join(shims, 'npx.cmd'), '@echo off\r\n');
    const child = spawnSync(process.execPath, ['--import', 'tsx', win32Spawn, shims, 'close-root-exits'], {
      encoding: 'utf8',
    });
    expect(child.status, child.stderr).toBe(0);
    // Before, the /F step was skipped once cmd.exe had exited, and 4322 and 4400 below it lived
    // on. 4401 has exited since the tree was recorded and its id is another process's: left alone.
    const taskkill = 'C:\\Windows\\System32\\taskkill.exe';
    expect(JSON.parse(child.stdout).slice(1)).toEqual([
      listing,
      { command: taskkill, args: ['/pid', '4321', '/T'], shell: false },
      listing,
      { command: taskkill, args: ['/pid', '4322', '/pid', '4400', '/T', '/F'], shell: false },
    ]);
  });

  it('ends the process tree of an MCP server a dead thread left behind on Windows', () => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', win32Spawn, '.', 'orphans'], {
      encoding: 'utf8',
    });
    expect(child.status, child.stderr).toBe(0);
    // SIGKILL reached cmd.exe only, as in close.
    expect(JSON.parse(child.stdout)).toEqual([
      { command: 'C:\\Windows\\System32\\taskkill.exe', args: ['/pid', '4321', '/T', '/F'], shell: false },
    ]);
  });

  it('stops waiting for a taskkill that does not exit within its bound, and kills it', () => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', win32Spawn, '.', 'hung'], {
      timeout: 30_000,
      encoding: 'utf8',
    });
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual([
      { command: 'C:\\Windows\\System32\\taskkill.exe', args: ['/pid', '4321', '/T', '/F'], shell: false },
      { kill: 9001, signal: 'SIGTERM' },
    ]);
  });

  it('starts a command found on the PATH of its environment, its arguments intact', async () => {
    const bin = tempDir('troupe-mcp-bin-');
    const server = path.join(bin, 'echo-args');
    const notification =
      'JSON.stringify({ jsonrpc: "2.0", method: "args", params: { argv: process.argv.slice(2) } })';
    writeFileSync(
      server,
      `#!${process.execPath}\nprocess.stdout.write(${notification} + '\\n');\nsetInterval(() => {}, 1000);\n`,
    );
    chmodSync(server, 0o755);
    const t = new StdioTransport({
      command: 'echo-args',
      args: ['a b', 'say "hi"', "it's", '$HOME', '*'],
      env: { PATH: bin },
      cwd: bin,
      maxMessageBytes: 1024,
      parse: (line) => JSON.parse(line) as JSONRPCMessage,
      closeGraceMs: 50,
    });
    const message = new Promise<JSONRPCMessage>((resolve) => {
      t.onmessage = resolve;
    });
    await t.start();
    try {
      expect(await message).toEqual({
        jsonrpc: '2.0',
        method: 'args',
        params: { argv: ['a b', 'say "hi"', "it's", '$HOME', '*'] },
      });
    } finally {
      await t.close();
    }
  });
});
