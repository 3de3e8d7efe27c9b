/**
 * The dynamic config every Temporal server the project starts runs with: the dev servers of the
 * tests and benches (as `--dynamic-config-value` flags), the production-shaped server on
 * PostgreSQL (scripts/prod-temporal.ts) and docker-compose.yml (deploy/temporal-dynamicconfig.yaml,
 * which test/foundation/compose.test.ts holds to these values).
 *
 * `matching.useNewMatcher`: the matcher that hands out backlogged tasks by priority, so that the
 * looks of thousands of waiting jobs go after a submit (contracts/task-priority.ts).
 * `matching.enableFairness`: the same matcher handing out each priority's tasks by fairness key in
 * turn, so that a burst of work on one endpoint never holds up another endpoint's (the key is the
 * endpoint: contracts/task-priority.ts). It implies the new matcher; both are off by default up to
 * server v1.29, and Temporal Cloud has both.
 * `matching.numTaskqueueReadPartitions` and `...WritePartitions`: one partition per task queue
 * (the server's default is four). The server keeps its order within a partition only, so with
 * four a task of another endpoint can wait behind a burst's tasks in the partition its poll lands
 * on; one partition is matched by one matching host, far from its cap for the workers of one
 * deployment.
 */
export const SERVER_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  'matching.useNewMatcher': true,
  'matching.enableFairness': true,
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
};

/** The same as `temporal server start-dev` flags, with any of a caller's own on top. */
export function dynamicConfigFlags(extra: Record<string, unknown> = {}): string[] {
  return Object.entries({ ...SERVER_DYNAMIC_CONFIG, ...extra }).flatMap(([key, value]) => [
    '--dynamic-config-value',
    `${key}=${JSON.stringify(value)}`,
  ]);
}

/** The same as a dynamic config file's YAML (each key with one unconstrained value). */
export function dynamicConfigYaml(): string {
  return Object.entries(SERVER_DYNAMIC_CONFIG)
    .map(([key, value]) => `${key}:\n  - value: ${JSON.stringify(value)}\n`)
    .join('');
}
