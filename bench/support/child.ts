/**
 * Running one benchmark in a fresh child process, so heaps, threads and JIT state of one benchmark
 * never colour another. The child prints its result as one marked JSON line on stdout; everything
 * else it prints is progress, passed through to our stderr.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Set by the runner: every benchmark's scratch directories go under this directory, which the
 * runner removes once the whole suite has run. Deleting thousands of journal files right before
 * the next benchmark would bill that benchmark for the deletion: on ext4, creating a file in a
 * block group with many inodes deleted in the last ~30 s scans past them in the kernel (measured
 * on the bench machine: ~1 ms of system CPU per create, against ~40 µs otherwise).
 */
export const SCRATCH_ROOT_ENV = 'TROUPE_BENCH_SCRATCH';

/** Prefix of the line that carries a child's result. */
export const RESULT_MARKER = '@@troupe-bench-result@@ ';

/** The entry a child runs: `run-one.ts <bench> [--quick]`. */
export const RUN_ONE = fileURLToPath(new URL('./run-one.ts', import.meta.url));

/** True when the module at `url` is the process's entry point (`node --import tsx bench/x.ts`). */
export function isMain(url: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && url === pathToFileURL(entry).href;
}

/** Writes the result line a parent reads. */
export function emitResult(result: unknown): void {
  process.stdout.write(`\n${RESULT_MARKER}${JSON.stringify(result)}\n`);
}

/** Options of {@link runInChild}. */
export interface ChildOptions {
  /** Node flags placed before `--import tsx` (e.g. `--expose-gc`, `--cpu-prof`). */
  readonly execArgv: readonly string[];
  readonly args: readonly string[];
  /** The child is killed (its own pid) after this long and the run fails. */
  readonly timeoutMs: number;
  readonly cwd: string;
}

/** Runs `entry` in a child Node with tsx and resolves its marked JSON result. */
export function runInChild(entry: string, options: ChildOptions): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...options.execArgv, '--import', 'tsx', entry, ...options.args], {
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let result: unknown;
    let found = false;
    let buffered = '';
    const onLine = (line: string): void => {
      if (line.startsWith(RESULT_MARKER)) {
        result = JSON.parse(line.slice(RESULT_MARKER.length));
        found = true;
      } else if (line.trim() !== '') {
        process.stderr.write(`  | ${line}\n`);
      }
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        onLine(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
      }
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out after ${Math.round(options.timeoutMs / 1000)} s`));
    }, options.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (buffered !== '') onLine(buffered);
      if (found && code === 0) resolve(result);
      else reject(new Error(`exited with ${signal ?? `code ${code}`}${found ? '' : ' and no result'}`));
    });
  });
}
