import { defineConfig } from 'vitest/config';

/**
 * `npm run test:reliability`: the reliability suite on the production-shaped Temporal (the real
 * server on PostgreSQL, scripts/prod-temporal.ts). Each file kills or restarts something shared
 * (the server, PostgreSQL, workers), so the files run one after another.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    fileParallelism: false,
    include: ['test/reliability/**/*.test.ts'],
    globalSetup: ['test/reliability/global-setup.ts'],
    // A generous bound for a loaded 2-core machine; each case has its own deadline below it.
    testTimeout: 600_000,
    hookTimeout: 180_000,
  },
});
