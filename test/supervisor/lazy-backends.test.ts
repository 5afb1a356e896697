import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const probe = fileURLToPath(new URL('../fixtures/supervisor/import-probe.ts', import.meta.url));

describe('start-up cost', () => {
  it('importing troupe loads no Redis client until the redis backend connects', () => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', probe], { encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout.trim())).toEqual({ bullmq: false, ioredis: false });
  });
});
