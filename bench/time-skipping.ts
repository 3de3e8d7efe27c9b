/**
 * How long, in real time, the time-skipping server takes to run a workflow that sleeps two days
 * (then calls one activity). Prints figures; asserts nothing.
 *
 *   npm run bench:time-skipping
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { provisionedServers } from '../scripts/servers';
import { stackCheck } from '../workflows/shared/stack-check';

const RUNS = Number(process.env.BENCH_RUNS ?? 7);

async function main(): Promise<void> {
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'ERROR', other: 'ERROR' } } },
  });
  const { testServer } = provisionedServers();
  const startedServer = performance.now();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: testServer } },
  });
  const serverMs = performance.now() - startedServer;
  try {
    const taskQueue = 'bench-time-skipping';
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: require.resolve('../workflows/shared/stack-check'),
      activities: { describeWorker: async (name: string) => name },
    });
    const timings: number[] = [];
    await worker.runUntil(async () => {
      for (let i = 0; i < RUNS; i++) {
        const started = performance.now();
        await env.client.workflow.execute(stackCheck, {
          taskQueue,
          workflowId: `bench-${i}`,
          args: [{ name: 'bench', wait: '2 days' }],
        });
        timings.push(performance.now() - started);
      }
    });
    const sorted = [...timings].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
    console.log(`time-skipping server start: ${serverMs.toFixed(0)} ms`);
    console.log(
      `two days of workflow time, ${RUNS} runs: first ${timings[0]?.toFixed(0)} ms (JVM warm-up), median ${median.toFixed(0)} ms, min ${sorted[0]?.toFixed(0)} ms`,
    );
  } finally {
    await env.teardown();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
