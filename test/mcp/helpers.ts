import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { McpServerConfig } from '../../src/mcp/config.ts';
import { spawnChild } from '../fixtures/children.ts';

export const mcpFixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/mcp');
const everything = path.join(mcpFixtures, 'everything.mjs');

/** A temp dir removed by `cleanup`. */
export function scratch(): { dir: string; cleanup: () => void } {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'troupe-mcp-')));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** server-everything over stdio, run with `node` (no npx, no download); its pids go to `pidFile`. */
export function stdioEverything(pidFile: string): McpServerConfig {
  return {
    type: 'stdio',
    command: process.execPath,
    args: [everything, 'stdio'],
    env: { TROUPE_TEST_PID_FILE: pidFile },
  };
}

/** The pids written to `pidFile`, oldest first. */
export function pids(pidFile: string): number[] {
  try {
    return readFileSync(pidFile, 'utf8').trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** A running server-everything over Streamable HTTP on 127.0.0.1. */
export interface HttpEverything {
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts server-everything in streamableHttp mode on 127.0.0.1 (`port` 0: a free one). */
export function httpEverything(port = 0): Promise<HttpEverything> {
  const child = spawnChild(process.execPath, [everything, 'streamableHttp'], {
    env: { ...process.env, TROUPE_TEST_PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stop = (): Promise<void> =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }
    });
  return new Promise((resolve, reject) => {
    let seen = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      const match = /listening on (\d+)/.exec(seen);
      if (match) {
        const actual = Number(match[1]);
        resolve({ url: `http://127.0.0.1:${actual}/mcp`, port: actual, child, stop });
      }
    });
    child.once('exit', (code) =>
      reject(new Error(`server-everything exited (${code}) before listening: ${seen}`)),
    );
    child.once('error', reject);
  });
}
