/**
 * Many workloads on one endpoint, against the same work alone. On one emulator (time scale 1, its
 * rate limits on) and one worker process (as `npm run worker` runs, webhooks on), each scenario on
 * a warm endpoint of its own with --workers workers:
 *
 * 1. idle: single jobs one after another on an idle endpoint (the gate's price: with its /run limit
 *    the job asks the endpoint's gate; a worker with no /run rate does not ask);
 * 2. alone: one batch of --batches x --items items;
 * 3. shared: --batches batches of --items items started together, plus a single job started every
 *    second while they run (priority 3, the default, then priority 1);
 * 4. apart: --burst single jobs started at once on endpoint A, and a single job on endpoint B right
 *    after: B's latency against idle, how many of A's submits were out before B's, and how long
 *    A's took to go out (each endpoint's work is its own fairness key in the worker's task queue);
 * 5. tenants: --tenants batches with fairness weights 1..N on one endpoint, their items short
 *    (--tenant-job-ms) so that the /run window is what they share, granted shares per tenant over
 *    the first minute against the weights.
 *
 * Prints times, the ratio shared/alone, 429s by operation at the emulator, single-job latencies
 * (median, max) against idle, B's latency beside A's burst (with each of B's workflow tasks: its
 * queue, its wait, and A's tasks the worker took meanwhile), and the tenants' shares. Asserts
 * nothing.
 *
 *   npm run bench:shared-endpoint [-- --items 1000] [--batches 3] [--workers 100] [--job-ms 1000]
 *                                  [--burst 1000] [--tenants 10] [--tenant-items 2000]
 *                                  [--tenant-job-ms 100] [--server prod] [--workflow-task-slots N]
 *                                  [--task-queue-partitions N] [--beside-priority N]
 *                                  [--beside-lane] [--skip shared,apart,tenants]
 *
 * --beside-priority: B's priority (A's is the default, 3); a workflow's later tasks wait in its
 * worker's sticky queue, which the server orders by priority alone.
 * --beside-lane: B (and the idle jobs) on a task queue of its own that the worker also polls
 * (TEMPORAL_EXTRA_TASK_QUEUES): a Temporal worker of its own, so a sticky queue of its own.
 * --server prod: on the production-shaped Temporal (scripts/prod-temporal.ts, four history shards)
 * instead of the CLI dev server (one history shard). --task-queue-partitions: the dev server's
 * partitions per task queue (the project's servers have one), within each of which the server
 * keeps its order.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';
import { awaitBatch, type BatchInput, cancelBatch, startBatch } from '../client/batches';
import { getEndpointLimits } from '../client/endpoint-limits';
import { awaitJob, startJob } from '../client/jobs';
import { ASK_TO_SEND_UPDATE, ENDPOINT_GATE_WORKFLOW, endpointGateId } from '../contracts/endpoint-gate';
import { startEmulator } from '../emulator';
import { historyFigures, type TaskSpan } from './batch-breakdown';
import {
  eventKind,
  median,
  numberArg,
  quietRuntime,
  say,
  seconds,
  sleep,
  startBenchTemporal,
  startInProcessWorker,
  warmEndpoint,
} from './support';

const ITEMS = Math.round(numberArg('items', 1_000));
const BATCHES = Math.round(numberArg('batches', 3));
const WORKERS = Math.round(numberArg('workers', 100));
const JOB_MS = Math.round(numberArg('job-ms', 1_000));
const TENANTS = Math.round(numberArg('tenants', 10));
const TENANT_ITEMS = Math.round(numberArg('tenant-items', 2_000));
// Short enough that the /run window, not the endpoint's workers, is what the tenants share.
const TENANT_JOB_MS = Math.round(numberArg('tenant-job-ms', 100));
const IDLE_JOBS = 10;
const BURST = Math.round(numberArg('burst', 1_000));
// B's priority beside A's burst (Temporal's 1 to 5); 0: the default, 3, as A's.
const BESIDE_PRIORITY = Math.round(numberArg('beside-priority', 0));
// B on a task queue of its own that the worker also polls (TEMPORAL_EXTRA_TASK_QUEUES), with its
// own Temporal worker and sticky queue; the idle jobs run there too, which also warms it.
const BESIDE_LANE = process.argv.includes('--beside-lane');
// The worker's workflow-task slots (WORKER_MAX_CONCURRENT_WORKFLOW_TASKS); 0: the worker's default.
const WORKFLOW_TASK_SLOTS = Math.round(numberArg('workflow-task-slots', 0));
// Phases left out: `--skip shared,tenants` runs idle and apart alone ("shared" includes "alone").
const SKIPPED = new Set((process.argv[process.argv.indexOf('--skip') + 1] ?? '').split(','));
if (!process.argv.includes('--skip')) SKIPPED.clear();

/** The value below which a `share` of the values fall (nearest rank). */
function quantile(values: number[], share: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)] ?? 0;
}

async function main() {
  quietRuntime();
  const apiKey = `sk-bench-${randomUUID()}`;
  const emulator = await startEmulator({ timeScale: 1, accounts: [{ apiKey }] });
  const env = await startBenchTemporal();
  say(`on ${env.name}`);
  const resultDir = mkdtempSync(path.join(os.tmpdir(), 'bench-shared-endpoint-'));
  const taskQueue = `bench-shared-endpoint-${randomUUID()}`;
  const besideQueue = BESIDE_LANE ? `${taskQueue}-lane` : taskQueue;
  const client = env.client;
  const worker = await startInProcessWorker({
    address: env.address,
    taskQueue,
    emulator,
    apiKey,
    resultStoreDir: resultDir,
    webhooks: true,
    run: { publicUrlFromGateway: true },
    env: {
      ...(WORKFLOW_TASK_SLOTS > 0
        ? { WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: String(WORKFLOW_TASK_SLOTS) }
        : {}),
      ...(BESIDE_LANE ? { TEMPORAL_EXTRA_TASK_QUEUES: besideQueue } : {}),
    },
  });

  const items = (count: number, tag: string, sleepMs = JOB_MS) =>
    Array.from({ length: count }, (_, i) => ({ input: { sleepMs, output: { tag, i } } }));

  /**
   * One job, start to result, in ms. `trace`: its workflow id, and it gets how long the start call
   * took and when (epoch ms) the result was seen.
   */
  async function singleJob(
    endpointId: string,
    priority?: number,
    trace?: { workflowId: string; startCallMs?: number; resultSeenAt?: number },
    queue = taskQueue,
  ): Promise<number> {
    const started = performance.now();
    const job = await startJob(
      client,
      {
        endpointId,
        request: { input: { sleepMs: JOB_MS, output: { single: true } } },
        ...(priority === undefined ? {} : { priority }),
      },
      { workflowId: trace?.workflowId ?? `bench-single-${randomUUID()}`, taskQueue: queue },
    );
    if (trace) trace.startCallMs = performance.now() - started;
    await awaitJob(client, { job });
    if (trace) trace.resultSeenAt = Date.now();
    return performance.now() - started;
  }

  function batch(
    endpointId: string,
    count: number,
    tag: string,
    extra: Partial<BatchInput> = {},
    sleepMs = JOB_MS,
  ) {
    return startBatch(
      client,
      { endpointId, items: { inline: items(count, tag, sleepMs) }, maxConcurrency: 400, ...extra },
      { workflowId: `bench-${tag}-${randomUUID()}`, taskQueue },
    );
  }

  // The gate's history events over all its runs (it continues as new every so many asks).
  async function gateHistory(endpointId: string): Promise<{ events: number; runs: number }> {
    let events = 0;
    let runs = 0;
    for await (const run of client.workflow.list({ query: `WorkflowId = "${endpointGateId(endpointId)}"` })) {
      runs++;
      events +=
        (await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory()).events?.length ?? 0;
    }
    return { events, runs };
  }

  const refused = (endpointId: string) => JSON.stringify(emulator.control.throttled(endpointId));

  // 1. idle
  const idleEndpoint = await warmEndpoint(emulator, apiKey, WORKERS);
  const idle: number[] = [];
  for (let k = 0; k < IDLE_JOBS; k++)
    idle.push(await singleJob(idleEndpoint, undefined, undefined, besideQueue));
  say(
    `idle endpoint: ${IDLE_JOBS} single jobs of ${JOB_MS} ms, median ${seconds(median(idle))}, max ${seconds(Math.max(...idle))}`,
  );

  // The gate's own price: its history events per single job, for jobs one after another on an idle
  // endpoint (first: asks below that never use their spare room would fill the window with it),
  // then asks for one request, timed from a client as a submit's activity asks.
  const gateId = endpointGateId(idleEndpoint);
  const gateEvents = async () => (await client.workflow.getHandle(gateId).fetchHistory()).events ?? [];
  const before = (await gateEvents()).length;
  for (let k = 0; k < IDLE_JOBS; k++) await singleJob(idleEndpoint);
  const during = (await gateEvents()).slice(before);
  // The single jobs' submits that asked the gate: the others were granted from spare room.
  const jobAsks = during.filter((event) => event.workflowExecutionUpdateAcceptedEventAttributes).length;
  const asks: number[] = [];
  for (let k = 0; k < IDLE_JOBS * 2; k++) {
    const askedAt = performance.now();
    await client.workflow.executeUpdateWithStart(ASK_TO_SEND_UPDATE, {
      args: [{ endpointId: idleEndpoint, id: `bench-ask-${k}`, count: 1, limit: 1_000 }],
      startWorkflowOperation: new WithStartWorkflowOperation(ENDPOINT_GATE_WORKFLOW, {
        workflowId: gateId,
        taskQueue,
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{ endpointId: idleEndpoint }],
      }),
    });
    asks.push(performance.now() - askedAt);
  }
  say(
    `the gate on an idle endpoint: an ask answered in median ${median(asks).toFixed(1)} ms ` +
      `(max ${Math.max(...asks).toFixed(1)} ms); ${IDLE_JOBS} single jobs one after another asked it ` +
      `${jobAsks} times (the others sent on spare room), ${(during.length / IDLE_JOBS).toFixed(1)} gate history events per single job`,
  );

  // 2. alone
  if (!SKIPPED.has('shared')) await aloneAndShared();
  async function aloneAndShared() {
    const aloneEndpoint = await warmEndpoint(emulator, apiKey, WORKERS);
    const started = performance.now();
    await awaitBatch(client, { batch: await batch(aloneEndpoint, BATCHES * ITEMS, 'alone') });
    const alone = performance.now() - started;
    say(`one batch of ${BATCHES * ITEMS}: ${seconds(alone)}; 429s ${refused(aloneEndpoint)}`);

    // 3. shared, with single jobs of priority 3 and 1 beside it
    for (const priority of [3, 1]) {
      const sharedEndpoint = await warmEndpoint(emulator, apiKey, WORKERS);
      const started = performance.now();
      const handles = await Promise.all(
        Array.from({ length: BATCHES }, (_, k) =>
          batch(sharedEndpoint, ITEMS, `shared-${k}`, { priority: 5 }),
        ),
      );
      const done = Promise.all(handles.map((handle) => awaitBatch(client, { batch: handle })));
      let finished = false;
      void done.then(() => {
        finished = true;
      });
      const singles: Promise<number>[] = [];
      while (!finished) {
        singles.push(singleJob(sharedEndpoint, priority));
        await sleep(1_000);
      }
      await done;
      const shared = performance.now() - started;
      const latencies = await Promise.all(singles);
      const gate = await gateHistory(sharedEndpoint);
      const requests = BATCHES * ITEMS + latencies.length;
      say(
        `${BATCHES} batches of ${ITEMS} together (priority 5), single jobs at priority ${priority}: ` +
          `${seconds(shared)}, ${(shared / alone).toFixed(2)}x one batch alone; 429s ${refused(sharedEndpoint)}; ` +
          `${latencies.length} single jobs: median ${seconds(median(latencies))} (idle ${seconds(median(idle))}), ` +
          `p90 ${seconds(quantile(latencies, 0.9))}, max ${seconds(Math.max(...latencies))}; in order: ` +
          latencies.map((latency) => (latency / 1_000).toFixed(1)).join(' ') +
          `; the gate's history: ${gate.events} events in ${gate.runs} runs, ` +
          `${(gate.events / requests).toFixed(3)} per request granted`,
      );
    }
  }

  // 4. apart: a burst on endpoint A, a single job on endpoint B right after it
  if (BURST > 0 && !SKIPPED.has('apart')) {
    const [burstEndpoint, besideEndpoint] = await Promise.all([
      warmEndpoint(emulator, apiKey, WORKERS),
      warmEndpoint(emulator, apiKey, WORKERS),
    ]);
    const started = performance.now();
    const cpuAtStart = process.cpuUsage();
    const burst = await Promise.all(
      Array.from({ length: BURST }, (_, k) =>
        startJob(
          client,
          { endpointId: burstEndpoint, request: { input: { sleepMs: JOB_MS, output: { burst: k } } } },
          { workflowId: `bench-burst-${k}-${randomUUID()}`, taskQueue },
        ),
      ),
    );
    const startedIn = performance.now() - started;
    const trace: { workflowId: string; startCallMs?: number; resultSeenAt?: number } = {
      workflowId: `bench-beside-${randomUUID()}`,
    };
    const beside = await singleJob(besideEndpoint, BESIDE_PRIORITY || undefined, trace, besideQueue);
    // Where B's job waited: for the server to take its start, for a worker to take its workflow
    // tasks and its activities, and for its result to reach the caller once the workflow ended.
    const events = (await client.workflow.getHandle(trace.workflowId).fetchHistory()).events ?? [];
    const figures = historyFigures(events);
    const resultMs = (trace.resultSeenAt ?? 0) - tsToMs(events.at(-1)?.eventTime);
    const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
    const taskWaits = sum(figures.taskPickup);
    // A retried activity's started event is its last attempt's: its wait for a slot is unknown, and
    // the time before it is its earlier attempts and the server's retry delays.
    const firstAttempts = figures.activities.filter((activity) => (activity.attempt ?? 1) === 1);
    const activityWaitList = firstAttempts.map(
      (activity) => (activity.startedAt ?? activity.scheduledAt) - activity.scheduledAt,
    );
    const activityWaits = sum(activityWaitList);
    const retried = figures.activities
      .filter((activity) => (activity.attempt ?? 1) > 1)
      .map(
        (activity) =>
          `; ${activity.type} ran ${activity.attempt} attempts, the last started ` +
          `${seconds((activity.startedAt ?? 0) - activity.scheduledAt, 2)} after it was scheduled`,
      )
      .join('');
    const waits = (values: number[]) => values.map((value) => seconds(value, 2)).join(', ');
    const ran = figures.activities
      .map(
        (activity) => `${activity.type} ${seconds((activity.closedAt ?? 0) - (activity.startedAt ?? 0), 2)}`,
      )
      .join(', ');
    const workflowMs = tsToMs(events.at(-1)?.eventTime) - tsToMs(events[0]?.eventTime);
    const [besideJob] = emulator.control.jobs(besideEndpoint, { removed: true });
    // B's way, in order: its history's events and the service's times for its job, from its start.
    const startMs = tsToMs(events[0]?.eventTime);
    const way = [
      ...events.map((event) => ({
        at: tsToMs(event.eventTime) - startMs,
        what: eventKind(event),
      })),
      ...(['submittedAt', 'startedAt', 'finishedAt'] as const).flatMap((field) =>
        besideJob?.[field] === undefined
          ? []
          : [{ at: besideJob[field] - startMs, what: `service: ${field}` }],
      ),
    ].sort((a, b) => a.at - b.at);
    const submittedAt = (endpointId: string) =>
      emulator.control.jobs(endpointId, { removed: true }).map((job) => job.submittedAt);
    while (emulator.control.submissions(burstEndpoint) < BURST) await sleep(100);
    const burstOut = performance.now() - started;
    const ahead = submittedAt(burstEndpoint).filter((at) => at < (besideJob?.submittedAt ?? 0)).length;
    await Promise.all(burst.map((job) => awaitJob(client, { job })));
    // The CPU this process (the worker, the emulator and the callers) spent on A's jobs and B's.
    const cpu = process.cpuUsage(cpuAtStart);
    const burstDone = performance.now() - started;
    // Workflow tasks the server refused among A's jobs (new events came during a task that ended
    // the workflow, say a poller's answer during the webhook's look): each is run again in full.
    let refused = 0;
    const burstTasks: TaskSpan[] = [];
    for (let from = 0; from < burst.length; from += 50) {
      const histories = await Promise.all(
        burst.slice(from, from + 50).map((job) => client.workflow.getHandle(job.workflowId).fetchHistory()),
      );
      for (const history of histories) {
        refused += (history.events ?? []).filter(
          (event) => eventKind(event) === 'workflow_task_failed',
        ).length;
        burstTasks.push(...historyFigures(history.events ?? []).tasks);
      }
    }
    // Each of B's workflow tasks: its queue, its wait, and A's tasks the worker took meanwhile (those
    // queued before it went first). The server orders the shared queue by fairness key; a cached
    // workflow's next tasks go to the worker's sticky queue, which it keeps by priority alone.
    const besideTasks = figures.tasks.map((task) => {
      const meanwhile = burstTasks.filter(
        (other) => other.startedAt > task.scheduledAt && other.startedAt < task.startedAt,
      );
      const before = meanwhile.filter((other) => other.scheduledAt < task.scheduledAt).length;
      const sticky = meanwhile.filter((other) => other.sticky).length;
      return (
        `${task.sticky ? 'sticky' : 'shared'} queue, waited ${seconds(task.startedAt - task.scheduledAt, 2)}, ` +
        `${meanwhile.length} of A's taken meanwhile${BESIDE_LANE ? " by the main queue's worker" : ''} ` +
        `(${sticky} from the sticky queue, ${before} queued before it)`
      );
    });
    say(
      `${BURST} jobs started at once on endpoint A (started in ${seconds(startedIn)}, all submitted ` +
        `${seconds(burstOut)} after the first start, ${refused} workflow tasks of theirs refused, all ended ${seconds(burstDone)} after it, ${seconds((cpu.user + cpu.system) / 1_000)} of CPU in this process), a single job on endpoint B right after${BESIDE_PRIORITY ? ` at priority ${BESIDE_PRIORITY}` : ''}${BESIDE_LANE ? ' on a task queue of its own' : ''}: ` +
        `${seconds(beside)} (idle ${seconds(median(idle))}), submitted after ${ahead} of A's ${BURST}; ` +
        `the start call took ${seconds(trace.startCallMs ?? 0, 2)}, its ${figures.taskPickup.length} workflow ` +
        `tasks waited ${seconds(taskWaits, 2)} for the worker in all (${waits(figures.taskPickup)}), its ` +
        `${firstAttempts.length} activities in their first attempt waited ${seconds(activityWaits, 2)} ` +
        `(${waits(activityWaitList)})${retried}; they ran ${ran}, the workflow took ${seconds(workflowMs, 2)} from its start to its end, ` +
        `the result reached the caller ${seconds(resultMs, 2)} after the workflow ended`,
    );
    say(`B's workflow tasks: ${besideTasks.join('; ')}`);
    say(`B's way (ms from its start): ${way.map(({ at, what }) => `${Math.round(at)} ${what}`).join(', ')}`);
  }

  // 5. tenants
  if (TENANTS > 0 && !SKIPPED.has('tenants')) {
    const tenantEndpoint = await warmEndpoint(emulator, apiKey, WORKERS);
    const tenants = await Promise.all(
      Array.from({ length: TENANTS }, (_, k) =>
        batch(
          tenantEndpoint,
          TENANT_ITEMS,
          `tenant-${k + 1}`,
          { fairnessKey: `tenant-${k + 1}`, fairnessWeight: k + 1, pageSize: 100 },
          TENANT_JOB_MS,
        ),
      ),
    );
    await sleep(60_000);
    const view = await getEndpointLimits(client, tenantEndpoint);
    await Promise.all(tenants.map((handle) => cancelBatch(client, { batch: handle })));
    const total = (view?.keys ?? []).reduce((sum, key) => sum + key.granted, 0);
    const weights = (TENANTS * (TENANTS + 1)) / 2;
    say(
      `${TENANTS} tenants of ${TENANT_ITEMS} items of ${TENANT_JOB_MS} ms, weights 1..${TENANTS}, ` +
        `first 60 s: ${total} submits granted`,
    );
    for (let k = 1; k <= TENANTS; k++) {
      const granted = view?.keys.find((key) => key.fairnessKey === `tenant-${k}`)?.granted ?? 0;
      const share = total === 0 ? 0 : granted / total;
      say(
        `  tenant-${k} (weight ${k}): ${granted} (${(share * 100).toFixed(1)}%, weighted share ${((k / weights) * 100).toFixed(1)}%)`,
      );
    }
  }

  await worker.stop();
  await env.teardown();
  await emulator.close();
  rmSync(resultDir, { recursive: true, force: true });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
