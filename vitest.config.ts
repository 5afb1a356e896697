import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Provider keys cleared, child processes killed with their process group after each test.
    setupFiles: ['test/setup.ts'],
    // Worker threads started by tests load .ts entry files through tsx.
    execArgv: ['--import', 'tsx'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two test files at a time even on two cores (vitest's default there is one): most files wait
    // on child processes, worker threads, Redis or the packed-package install rather than compute.
    maxWorkers: 2,
  },
});
