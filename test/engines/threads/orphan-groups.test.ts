/**
 * A dead thread's MCP server groups, killed by the thread engine (`killOrphans`), are no longer
 * followed for the process's exit: the exit's SIGKILL to every followed group would otherwise hit
 * whatever process group was later given the same id.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { killOrphans } from '../../../src/engines/threads/thread-engine.ts';
import {
  isWatchedServerGroup,
  unwatchServerGroup,
  watchServerGroup,
} from '../../../src/mcp/server-groups.ts';

describe.skipIf(process.platform === 'win32')('killOrphans', () => {
  it('kills a followed server group and stops following it', async () => {
    const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
    const pgid = child.pid as number;
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('exit', (_code, signal) => resolve(signal)),
    );
    watchServerGroup(pgid);
    try {
      killOrphans(new Set([-pgid]));
      expect(await exited).toBe('SIGKILL');
      expect(isWatchedServerGroup(pgid)).toBe(false);
    } finally {
      unwatchServerGroup(pgid);
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
  });
});
