import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StdioTransport } from '../../src/mcp/stdio-transport.ts';
import { tempDir } from '../fixtures/temp-dirs.ts';

const win32Spawn = fileURLToPath(new URL('../fixtures/mcp/win32-spawn.ts', import.meta.url));
const orphaningServer = fileURLToPath(new URL('../fixtures/mcp/orphaning-server.sh', import.meta.url));
const exitWithoutClose = fileURLToPath(new URL('../fixtures/mcp/exit-without-close.ts', import.meta.url));

/** True once the process no longer runs (gone, or a zombie waiting to be reaped). */
function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/** Background processes the orphaning server started, killed after each test whatever happened. */
const backgrounds: number[] = [];
afterEach(() => {
  for (const pid of backgrounds.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone, as it should be.
    }
  }
});

/** The id orphaning-server.sh wrote to `file`, once it has. */
async function backgroundPid(file: string): Promise<number> {
  const pid = await vi.waitFor(
    () => {
      if (!existsSync(file)) throw new Error(`no ${file} yet`);
      return Number(readFileSync(file, 'utf8').trim());
    },
    { timeout: 10_000 },
  );
  expect(pid).toBeGreaterThan(1);
  backgrounds.push(pid);
  return pid;
}

/** orphaning-server.sh, writing its background process's id to `pidFile`. */
function orphaning(pidFile: string, mode?: 'exit'): StdioTransport {
  return new StdioTransport({
    command: '/bin/sh',
    args: [orphaningServer, pidFile, ...(mode ? [mode] : [])],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    cwd: process.cwd(),
    maxMessageBytes: 64,
    parse: (line) => JSON.parse(line) as JSONRPCMessage,
    closeGraceMs: 500,
  });
}
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

  it.skipIf(process.platform === 'win32')(
    'ends what a server that exits at the end of its stdin started, when it is closed',
    async () => {
      const pidFile = path.join(tempDir('troupe-mcp-orphans-'), 'background.pid');
      const t = orphaning(pidFile);
      await t.start();
      const background = await backgroundPid(pidFile);
      await t.close();
      // Before, only the server was signalled, and only while it ran: its `sleep 1000` lived on.
      await vi.waitFor(() => expect(isGone(background)).toBe(true), { timeout: 10_000 });
    },
  );

  it.skipIf(process.platform === 'win32')(
    'ends what a server started when the server exits by itself',
    async () => {
      const pidFile = path.join(tempDir('troupe-mcp-orphans-'), 'background.pid');
      const t = orphaning(pidFile, 'exit');
      const closed = new Promise<void>((resolve) => {
        t.onclose = resolve;
      });
      await t.start();
      const background = await backgroundPid(pidFile);
      await vi.waitFor(() => expect(isGone(background)).toBe(true), { timeout: 10_000 });
      // The background process held the server's stdout: only now is the transport told closed.
      await closed;
      await t.close();
    },
  );

  it.skipIf(process.platform === 'win32')(
    "ends a server's process group when the process exits without closing it",
    async () => {
      const pidFile = path.join(tempDir('troupe-mcp-orphans-'), 'background.pid');
      const child = spawnSync(process.execPath, ['--import', 'tsx', exitWithoutClose, pidFile], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(child.status, child.stderr).toBe(0);
      const background = await backgroundPid(pidFile);
      // In a group of its own the server no longer gets the terminal's Ctrl-C: the process's exit
      // has to end it.
      await vi.waitFor(() => expect(isGone(background)).toBe(true), { timeout: 10_000 });
    },
  );

  it.skipIf(process.platform === 'win32')(
    "ends a server's process group when a second Ctrl-C ends the process at once",
    async () => {
      const pidFile = path.join(tempDir('troupe-mcp-orphans-'), 'background.pid');
      const child = spawnSync(process.execPath, ['--import', 'tsx', exitWithoutClose, pidFile, 'raise'], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(child.signal, child.stderr).toBe('SIGINT');
      const background = await backgroundPid(pidFile);
      await vi.waitFor(() => expect(isGone(background)).toBe(true), { timeout: 10_000 });
    },
  );

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
