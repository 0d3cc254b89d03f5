import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Vitest's default is one worker less than the cores: one file at a time on the 2-core CI machine,
    // where the tests' own child processes (CLI builds, servers) leave the second core mostly idle.
    maxWorkers: 2,
  },
});
