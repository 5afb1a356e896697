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
  },
});
