/**
 * Submitting under a lease under the fault mix: 30% of /run answered 429 with
 * Retry-After 2 s, 10% of /run connections dropped before processing, 20% of /status answered 500,
 * 10% dropped after processing, half the webhooks lost. Prints, for the jobs run: completed,
 * uncertain submits and how they were resolved (adopted, submitted again after the lease), failed,
 * lease lapses, submissions per job (workflows' count and the emulator's), and the extra latency a
 * resolved uncertain submit costs (median end-to-end time of jobs with one, less that of jobs
 * without). Asserts nothing.
 *
 *   npx tsx bench/submit-lease.ts [--jobs 500] [--lease 60] [--job-s 5] [--max-submissions 3] [--off]
 *
 * --jobs             jobs, all at once (default 500)
 * --lease            the lease in seconds (default 60, the library's default when webhooks are armed)
 * --job-s            how long each job runs, in seconds (default 5)
 * --max-submissions  the workflow's maxSubmissions (default 3, the library's default)
 * --off              submitLease false: today's rule (an uncertain submit fails as SubmitUncertain)
 *
 * Real stack: a dev server, the emulator over HTTP at time scale 1 (service time is real time, as
 * Temporal's timers are), one worker (runWorker) with its webhook gateway, library defaults
 * otherwise. The emulator's endpoint has room for every job at once.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Runtime } from '@temporalio/worker';
import type { JobResult } from '../contracts/job-snapshot';
import { startEmulator } from '../emulator';
import { awaitJob, jobFailureOf, startJob } from '../index';
import { loadWorkerConfig } from '../worker/config';
import { createLogger } from '../worker/logger';
import { runWorker } from '../worker/run-worker';
import { temporalLoggerFor } from '../worker/temporal-logger';
import { startDevServer } from './support';

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? Number(process.argv[index + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : fallback;
};
const JOBS = Math.round(arg('jobs', 500));
const LEASE_S = arg('lease', 60);
const JOB_S = arg('job-s', 5);
const MAX_SUBMISSIONS = Math.round(arg('max-submissions', 3));
const OFF = process.argv.includes('--off');
const say = (line: string) => console.log(line);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : (sorted[Math.floor((sorted.length - 1) / 2)] as number);
};
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

interface Outcome {
  index: number;
  result?: JobResult;
  failure?: { type: string; submissions: number; uncertainSubmits: number };
  latencyMs: number;
}

async function main(): Promise<void> {
  const started = Date.now();
  Runtime.install({
    logger: temporalLoggerFor(createLogger({ level: 'error' })),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'ERROR', other: 'ERROR' } } },
  });
  const apiKey = randomBytes(24).toString('base64url');
  const run = `${process.pid}-${Date.now()}`;
  const taskQueue = `bench-submit-lease-${run}`;
  const workdir = path.join(os.tmpdir(), `durable-serverless-bench-${run}`);
  const stop = new AbortController();
  let env: TestWorkflowEnvironment | undefined;
  let worker: Promise<void> | undefined;
  const emulator = await startEmulator({
    accounts: [{ apiKey }],
    timeScale: 1,
    coldStartMs: 0,
    flashBootMs: 0,
  });

  try {
    env = await startDevServer();
    const config = loadWorkerConfig(
      {
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        SERVERLESS_API_KEY: apiKey,
        SERVERLESS_API_URL: emulator.apiUrl,
        SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
        SERVERLESS_REST_URL: emulator.restUrl,
        WEBHOOK_PORT: '0',
        WEBHOOK_SECRET: randomBytes(32).toString('base64url'),
        RESULT_STORE_DIR: path.join(workdir, 'results'),
        LOG_LEVEL: 'error',
      },
      workdir,
    );
    const ready = new Promise<void>((resolve) => {
      worker = runWorker(config, {
        signal: stop.signal,
        logger: createLogger({ level: 'error', secrets: [apiKey] }),
        publicUrlFromGateway: true,
        onReady: () => resolve(),
      });
    });
    await Promise.race([ready, worker]);

    const { control } = emulator;
    const endpointId = control.createEndpoint(apiKey, {
      name: 'bench-submit-lease',
      templateId: 'scripted',
      workersMin: JOBS,
      workersMax: JOBS,
    }).id;
    for (let i = 0; i < 500 && control.endpoints()[0]?.workers.idle !== JOBS; i++) await sleep(10);
    // The first matching rule whose roll passes applies: later rules are scaled to their share.
    control.injectFault({
      operation: 'run',
      endpointId,
      kind: 'status',
      httpStatus: 429,
      retryAfterSeconds: 2,
      probability: 0.3,
    });
    control.injectFault({ operation: 'run', endpointId, kind: 'drop-before', probability: 0.1 / 0.7 });
    control.injectFault({
      operation: 'status',
      endpointId,
      kind: 'status',
      httpStatus: 500,
      probability: 0.2,
    });
    control.injectFault({ operation: 'status', endpointId, kind: 'drop-after', probability: 0.1 / 0.8 });
    control.webhookFaults({ lose: 0.5 });

    say(
      `submit lease under the fault mix: ${JOBS} jobs of ${JOB_S} s, all at once, one worker with webhooks`,
    );
    say(
      `  submitLease: ${OFF ? "false (today's rule: onUncertainSubmit fail)" : `${LEASE_S} s`}, maxSubmissions ${MAX_SUBMISSIONS}; ` +
        'faults: /run 30% 429 (Retry-After 2 s) + 10% dropped before processing; /status 20% 500 + 10% dropped after processing; 50% of webhooks lost',
    );
    say(`  set up in ${seconds(Date.now() - started)}`);

    const began = Date.now();
    const handles: WorkflowHandle[] = [];
    for (let start = 0; start < JOBS; start += 50) {
      const batch = Array.from({ length: Math.min(50, JOBS - start) }, (_, k) =>
        startJob(
          env!.client,
          {
            endpointId,
            request: { input: { sleepMs: JOB_S * 1000, output: { index: start + k } } },
            submitLease: OFF ? false : LEASE_S * 1000,
            maxSubmissions: MAX_SUBMISSIONS,
          },
          { workflowId: `bench-submit-lease-${run}-${start + k}`, taskQueue },
        ),
      );
      handles.push(...(await Promise.all(batch)));
    }
    const outcomes: Outcome[] = await Promise.all(
      handles.map(async (handle, index): Promise<Outcome> => {
        let result: JobResult | undefined;
        let failure: Outcome['failure'];
        try {
          result = await awaitJob(env!.client, { job: handle });
          if ((result.output as { index?: number } | undefined)?.index !== index)
            throw new Error(`job ${index}: wrong output`);
        } catch (error) {
          const typed = jobFailureOf(error);
          failure = {
            type: typed?.type ?? String(error),
            submissions: Number(typed?.details?.submissions ?? 0),
            uncertainSubmits: Number(typed?.details?.uncertainSubmits ?? 0),
          };
        }
        const described = await handle.describe();
        const latencyMs = (described.closeTime?.getTime() ?? Date.now()) - described.startTime.getTime();
        return { index, ...(result ? { result } : {}), ...(failure ? { failure } : {}), latencyMs };
      }),
    );
    const wall = Date.now() - began;

    const done = outcomes.filter((o) => o.result);
    const failed = outcomes.filter((o) => o.failure);
    const sum = (f: (r: JobResult) => number | undefined) =>
      done.reduce((s, o) => s + (f(o.result as JobResult) ?? 0), 0);
    const uncertain =
      sum((r) => r.uncertainSubmits) + failed.reduce((s, o) => s + (o.failure?.uncertainSubmits ?? 0), 0);
    const adopted = sum((r) => r.uncertainAdopted);
    const resubmitted = sum((r) => r.resubmittedAfterLease);
    const lapses = sum((r) => r.leaseLapses);
    const submissions =
      sum((r) => r.submissions) + failed.reduce((s, o) => s + (o.failure?.submissions ?? 0), 0);
    const failedByType = new Map<string, number>();
    for (const o of failed)
      failedByType.set(o.failure?.type as string, (failedByType.get(o.failure?.type as string) ?? 0) + 1);
    const clean = done
      .filter((o) => o.result?.uncertainSubmits === 0 && !o.result?.leaseLapses)
      .map((o) => o.latencyMs);
    const resolved = done.filter((o) => (o.result?.uncertainSubmits ?? 0) > 0).map((o) => o.latencyMs);
    const completedJobs = control.jobs(endpointId).filter((job) => job.status === 'COMPLETED');
    const perWorkflow = new Map<string, number>();
    for (const job of completedJobs)
      perWorkflow.set(job.webhook ?? job.id, (perWorkflow.get(job.webhook ?? job.id) ?? 0) + 1);

    say('');
    say(`  completed with the right output: ${done.length} / ${JOBS}`);
    say(
      `  failed: ${failed.length}${failed.length ? ` (${[...failedByType].map(([t, n]) => `${t} ${n}`).join(', ')})` : ''}`,
    );
    say(
      `  uncertain submits: ${uncertain}; resolved by adoption ${adopted}, by a new submission after the lease ${resubmitted}; jobs with one: ${resolved.length} completed`,
    );
    say(`  lease lapses (extension failed until the lease ended; deleted and sent again): ${lapses}`);
    say(
      `  submissions per job: ${(submissions / JOBS).toFixed(3)} (workflows' count, uncertain ones included); ` +
        `jobs the service created: ${control.submissions(endpointId)} (${(control.submissions(endpointId) / JOBS).toFixed(3)} per job)`,
    );
    say(
      `  workflows with more than one completed job on the service: ${[...perWorkflow.values()].filter((n) => n > 1).length}`,
    );
    say(
      `  end-to-end latency, median: jobs without an uncertain submit ${seconds(median(clean))} (${clean.length}), ` +
        `jobs with a resolved one ${seconds(median(resolved))} (${resolved.length}); extra ${seconds(median(resolved) - median(clean))}`,
    );
    say(`  wall time ${seconds(wall)}`);
  } finally {
    stop.abort();
    await worker?.catch(() => undefined);
    await env?.teardown();
    await emulator.close();
    await rm(workdir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
