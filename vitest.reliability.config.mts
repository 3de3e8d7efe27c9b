import { configDefaults, defineConfig } from 'vitest/config';
import { longestFirst } from './test/support/longest-first.mjs';

/**
 * `npm run test:reliability`: the reliability suite on the production-shaped Temporal (the real
 * server on PostgreSQL, scripts/prod-temporal.ts).
 *
 * Two groups, one after the other, each with a server of its own (test/reliability/global-setup.ts):
 * - TWO_AT_A_TIME: the files whose every lease holds under contention: the crash loop (its lease
 *   outlasts a slow recovery by design), faults without a lease or with the lease re-runs they
 *   count apart, lost webhooks. Each waits mostly on leases, heartbeats and timers, and none can
 *   disturb another's server, task queue or endpoint;
 * - every other file, one at a time and alone: the batches whose worker is SIGKILLed under the
 *   default 60 s lease, which a recovery slowed by a second file can outlast (an item then runs
 *   twice), and the files that kill or restart the server or PostgreSQL, which every file on that
 *   server would see go. A new file runs here until it is shown to hold beside another.
 */
/** Longest first, so that the two at a time end together rather than one after the other. */
const TWO_AT_A_TIME = [
  'test/reliability/worker-kill.test.ts',
  'test/reliability/batch-faults.test.ts',
  'test/reliability/faults.test.ts',
  'test/reliability/webhooks-lost.test.ts',
];

const ALL = ['test/reliability/**/*.test.ts'];

// Each group's own server: set per project, since a setup at the root would start a third.
const globalSetup = ['test/reliability/global-setup.ts'];

export default defineConfig({
  test: {
    pool: 'forks',
    sequence: { sequencer: longestFirst(TWO_AT_A_TIME) },
    // A generous bound for a loaded 2-core machine; each case has its own deadline below it.
    testTimeout: 600_000,
    hookTimeout: 180_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'two-at-a-time',
          sequence: { groupOrder: 0 },
          maxWorkers: 2,
          globalSetup,
          include: TWO_AT_A_TIME,
        },
      },
      {
        extends: true,
        test: {
          name: 'alone',
          sequence: { groupOrder: 1 },
          fileParallelism: false,
          globalSetup,
          include: ALL,
          exclude: [...configDefaults.exclude, ...TWO_AT_A_TIME],
        },
      },
    ],
  },
});
