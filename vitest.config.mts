import { configDefaults, defineConfig } from 'vitest/config';
import { longestFirst } from './test/support/longest-first.mjs';

/**
 * `npm test` runs three tiers, each started only with what it needs:
 * - unit: no Temporal server at all (schemas, rules, the emulator, activities, the CLI's parsing);
 * - workflows: workflow code on a time-skipping test server each file starts for itself;
 * - integration: the real worker, gateway and client against one shared Temporal dev server
 *   (started once by test/support/global-setup.ts) and the emulator over HTTP.
 * `npm run test:unit`, `test:workflows` and `test:integration` run one tier; the reliability
 * suite has its own config (vitest.reliability.config.mts) and server.
 *
 * Unit and workflows need no shared server, so they run side by side, two files at once between
 * them (each workflows file is a CPU-heavy test server of its own); integration runs after them
 * (sequence.groupOrder) with as many files at once as suits it.
 */
/**
 * The longest files of the integration tier, in the order they start (test/support/longest-first.ts):
 * the 1,000 jobs, the leases waited out in real time (10 s and more), the 200 jobs of the worker
 * crash.
 */
const LONGEST_FIRST = [
  'test/integration/job-many.test.ts',
  'test/integration/job-lease.test.ts',
  'test/integration/batch-lease.test.ts',
  'test/integration/job-many-crash.test.ts',
];

const shared = {
  // Temporal's native bridge is known to crash inside worker threads: child processes, not threads.
  pool: 'forks' as const,
  exclude: [...configDefaults.exclude, 'test/reliability/**'],
  testTimeout: 60_000,
  hookTimeout: 120_000,
};

export default defineConfig({
  test: {
    ...shared,
    sequence: { sequencer: longestFirst(LONGEST_FIRST) },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          sequence: { groupOrder: 0 },
          maxWorkers: 2,
          // One process runs many files (each file's modules are loaded once per process, not once
          // per file): these files start no servers and keep no process state between them.
          isolate: false,
          include: [
            'test/{api,activities,client,emulator,engine,foundation,observability,stores,worker}/**/*.test.ts',
          ],
        },
      },
      {
        extends: true,
        test: {
          name: 'workflows',
          sequence: { groupOrder: 0 },
          maxWorkers: 2,
          // As for unit: each file starts and stops its own test server and worker, so files can
          // share a process and load the SDK once.
          isolate: false,
          include: ['test/workflows/**/*.test.ts'],
          globalSetup: ['test/support/bundle-cache-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          sequence: { groupOrder: 1 },
          // Mostly waiting on servers, jobs and timers, so more files at once than there are
          // cores; every test synchronises on events, never on how fast the machine is.
          maxWorkers: 4,
          // Hang protection only, never a measure: a test here may spawn the CLI several times
          // and wait on visibility, which on a loaded 2-core machine takes well over a minute.
          testTimeout: 180_000,
          include: ['test/{integration,package,e2e}/**/*.test.ts'],
          globalSetup: ['test/support/bundle-cache-setup.ts', 'test/support/global-setup.ts'],
        },
      },
    ],
  },
});
