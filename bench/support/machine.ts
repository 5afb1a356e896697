/** What the results were measured on, and at which commit. */
import { execFileSync } from 'node:child_process';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';

/** The machine a run was measured on. */
export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly platform: string;
  /** 1-minute load average when the run started and ended: other work on the machine shows here. */
  readonly loadAverage: { start: number; end: number | undefined };
}

export function machine(): Machine {
  return {
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    platform: `${process.platform} ${process.arch}`,
    loadAverage: { start: loadAverage(), end: undefined },
  };
}

export function loadAverage(): number {
  return Math.round((loadavg()[0] ?? 0) * 100) / 100;
}

/** The checked-out commit (short hash, `+dirty` with uncommitted changes), or `unknown`. */
export function commit(cwd: string): string {
  try {
    const hash = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8' }).trim();
    const status = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd,
      encoding: 'utf8',
    });
    return status.trim() === '' ? hash : `${hash}+dirty`;
  } catch {
    return 'unknown';
  }
}
