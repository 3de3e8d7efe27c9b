import { configDefaults, defineConfig } from 'vitest/config';
import { longestFirst } from './test/support/longest-first.mjs';

/**
 * `npm run test:reliability`: the reliability suite on the production-shaped Temporal (the real
 * server on PostgreSQL, scripts/prod-temporal.ts).
 *
 * Two groups, one after the other, each with a server of its own (test/reliability/global-setup.ts):
 * - the files that kill only what they started themselves (workers, gateways, an emulator's
 *   faults), two at a time: each waits mostly on leases, heartbeats and timers, and none can
 *   disturb another's server, task queue or endpoint;
 * - the files that kill or restart the server or PostgreSQL (RESTARTS), one at a time and alone,
 *   since every file on that server would see it go.
 */
const RESTARTS = [
  'test/reliability/batch-restart.test.ts',
  'test/reliability/postgres-restart.test.ts',
  'test/reliability/temporal-restart.test.ts',
];

/** The longest files first, so that the two at a time end together rather than one after. */
const LONGEST_FIRST = [
  'test/reliability/worker-kill.test.ts',
  'test/reliability/batch-faults.test.ts',
  'test/reliability/batch-scale-out.test.ts',
  'test/reliability/faults.test.ts',
  'test/reliability/batch-worker-kill.test.ts',
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
          exclude: [...configDefaults.exclude, ...RESTARTS],
        },
      },
      {
        extends: true,
        test: {
          name: 'restarts',
          sequence: { groupOrder: 1 },
          fileParallelism: false,
          globalSetup,
          include: RESTARTS,
        },
      },
    ],
  },
});
