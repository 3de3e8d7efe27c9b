import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Temporal's native bridge is known to crash inside worker threads: one process per file.
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
