import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Temporal's native bridge is known to crash inside worker threads: one process per file.
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    // The reliability suite runs on its own server: npm run test:reliability (vitest.reliability.config.mts).
    exclude: [...configDefaults.exclude, 'test/reliability/**'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
