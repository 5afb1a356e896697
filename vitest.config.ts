import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import SlowestFirstSequencer from './test/sequencer.ts';

export default defineConfig({
  // The examples import `troupe` as a user's code does; here that is src/, as tsconfig.json's
  // `paths` make it for tsc and tsx (not the compiled dist/ a self-reference would load).
  resolve: {
    alias: [
      { find: /^troupe$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
      { find: /^troupe\/testing$/, replacement: fileURLToPath(new URL('./src/testing.ts', import.meta.url)) },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Provider keys cleared, child processes killed with their process group after each test.
    setupFiles: ['test/setup.ts'],
    // Brings the cached bundle worker threads and CLI processes start from up to date, once.
    globalSetup: ['test/global-setup.ts'],
    // The slowest files start first even without timings from an earlier run (a fresh clone).
    sequence: { sequencer: SlowestFirstSequencer },
    // No `--import tsx` for the test processes: vitest compiles the tests and src/ itself, the
    // actor-host and redis-worker threads start from the cached bundle (workers/*.mjs), and child
    // processes are started with tsx or through bin/troupe.mjs (the bundle). Inherited by every worker thread,
    // the flag registered tsx's CommonJS hooks there too, which recompiled the .mjs bootstrap with
    // esbuild (and failed, on its top-level await) at every thread start and routed every CommonJS
    // dependency through tsx: ~13 % of the CPU of the supervisor test files.
    // A hang guard, not a speed check: no test asserts timing. Tests that start, crash and restart
    // worker threads take 10-20 s on an idle
    // 2-core machine and up to ~65 s with the cores loaded 6-8x over (issue 15's load check: two
    // busy loops plus other work beside the suite), so the guard is three minutes for every test and
    // hook; files that need more say so themselves.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // Test files run one after another in each of the two worker processes instead of a fresh
    // process per file: starting a process and importing src/ and vitest through tsx for each file
    // cost more than most files' tests (94 quick files: 128 s alone, 21 s sharing). Files leave
    // the process as they found it: env, timers, cwd and mocks are restored by the file that
    // changes them, and test/setup.ts runs before each file.
    isolate: false,
    // Three test files at a time even on two cores (vitest's default there is one): most files wait
    // on child processes, worker threads, Redis or the packed-package install rather than compute.
    // With two, a fresh clone's run kept the cores 1.8 of 2 busy and took 257 s; with three, 240 s
    // (bench/RESULTS.md, fast15).
    maxWorkers: 3,
  },
});
