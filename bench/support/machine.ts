/** What the results were measured on, and at which commit. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';

/** The machine a run was measured on. */
export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly platform: string;
  /** 1-minute load average when the run started and ended: other work on the machine shows here. */
  readonly loadAverage: { start: number; end: number | undefined };
  /**
   * CPU seconds the hypervisor gave to others while this guest's CPUs wanted to run, all CPUs,
   * during the run (Linux `steal` in /proc/stat); undefined where it is not accounted.
   */
  readonly stolenCpuSeconds: number | undefined;
}

export function machine(): Machine {
  return {
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    platform: `${process.platform} ${process.arch}`,
    loadAverage: { start: loadAverage(), end: undefined },
    stolenCpuSeconds: undefined,
  };
}

/** Linux's USER_HZ: /proc/stat counts in 1/100 s on every architecture Node runs on. */
const USER_HZ = 100;

/**
 * CPU seconds stolen from this guest by its hypervisor since boot (all CPUs), or undefined off
 * Linux. A VM's speed can change by 1.5-2x within the hour (bench/RESULTS.md); steal is the part
 * of that the guest can see.
 */
export function stolenSeconds(): number | undefined {
  try {
    const fields = (readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '').trim().split(/\s+/);
    const steal = Number(fields[8]);
    return fields[0] === 'cpu' && Number.isFinite(steal) ? steal / USER_HZ : undefined;
  } catch {
    return undefined;
  }
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
