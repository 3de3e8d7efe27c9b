import { configDefaults, defineConfig } from 'vitest/config';
import { longestFirst } from './test/support/longest-first.mjs';

/**
 * `npm run test:reliability`: the reliability suite on the production-shaped Temporal (the real
 * server on PostgreSQL, scripts/prod-temporal.ts).
 *
 * Two groups, one after the other, each with a server of its own (test/reliability/global-setup.ts):
 * - the files whose every lease holds under contention, two at a time: the crash loop (its lease
 *   outlasts a slow recovery by design), faults without a lease or with the leases they count
 *   apart, lost webhooks. Each waits mostly on leases, heartbeats and timers, and none can disturb
 *   another's server, task queue or endpoint;
 * - one at a time and alone (ALONE): the batches whose worker is SIGKILLed under the default
 *   60 s lease, which a recovery slowed by a second file can outlast (an item then runs twice),
 *   and the files that kill or restart the server or PostgreSQL, which every file on that server
 *   would see go.
 */
const ALONE = [
  'test/reliability/batch-worker-kill.test.ts',
  'test/reliability/batch-scale-out.test.ts',
  'test/reliability/batch-s3-machines.test.ts',
  'test/reliability/batch-restart.test.ts',
  'test/reliability/postgres-restart.test.ts',
  'test/reliability/temporal-restart.test.ts',
];

/** The longest files first, so that the two at a time end together rather than one after. */
const LONGEST_FIRST = [
  'test/reliability/worker-kill.test.ts',
  'test/reliability/batch-faults.test.ts',
  'test/reliability/faults.test.ts',
];

// Each group's own server: set per project, since a setup at the root would start a third.
const globalSetup = ['test/reliability/global-setup.ts'];

export default defineConfig({
  test: {
    pool: 'forks',
    sequence: { sequencer: longestFirst(LONGEST_FIRST) },
    // A generous bound for a loaded 2-core machine; each case has its own deadline below it.
    testTimeout: 600_000,
    hookTimeout: 180_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'reliability',
          sequence: { groupOrder: 0 },
          maxWorkers: 2,
          globalSetup,
          include: ['test/reliability/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE],
        },
      },
      {
        extends: true,
        test: {
          name: 'alone',
          sequence: { groupOrder: 1 },
          fileParallelism: false,
          globalSetup,
          include: ALONE,
        },
      },
    ],
  },
});
