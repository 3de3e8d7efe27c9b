/**
 * Plumbing of the job workflow tests: a time-skipping server with the search attributes
 * registered, one workflow bundle per file, a worker of its own task queue around each test, and
 * mocked job activities that script the remote job and record every call.
 */
import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { CancelJobResult, JobActivities, SubmitResult } from '../../activities/job';
import { beatBeforeSending, submitBeats } from '../../activities/submit-beat';
import type { JobSnapshot } from '../../contracts/job-snapshot';
import type { JobObservation, StreamResult, WaitResult } from '../../contracts/job-types';
import { jobSnapshotQuery } from '../../workflows/job/job-definitions';
import { timeSkippingEnv } from '../support/temporal';
import { bundleWorkflows } from '../support/workflow-harness';
import { waitFor } from './wait-for';

export { failureOf, quietRuntime, withWorker } from '../support/workflow-harness';

/** The job tests' server: time-skipping, with the search attributes the job workflow sets. */
export function jobTestEnv(): Promise<TestWorkflowEnvironment> {
  return timeSkippingEnv();
}

export function bundleJobWorkflow(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflows(require.resolve('./job-test-workflows.ts'));
}

/**
 * An activity that never answers (its worker died mid-call): it waits, silent, until it is
 * cancelled (the worker shutting down at the test's end), whatever its timeouts say.
 */
export function neverAnswers(): Promise<never> {
  return Context.current().cancelled;
}

/**
 * A submit whose worker died after sending: the server has its beat (activities/submit-beat.ts),
 * then nothing more comes.
 */
export async function diesAfterSending(): Promise<never> {
  await beatBeforeSending(submitBeats(() => ({ sending: true })));
  return neverAnswers();
}

/** Resolves when the activity is cancelled (heartbeating so that the cancellation can arrive). */
export async function untilCancelled(): Promise<never> {
  const context = Context.current();
  for (;;) {
    context.heartbeat();
    await context.sleep(20);
  }
}

export function isActivityCancellation(error: unknown): boolean {
  return error instanceof CancelledFailure;
}

/** The ApplicationFailure a workflow ended with. */
export type Call = { name: string; input: unknown; attempt: number };

/**
 * A scripted remote job. `statuses` is what successive waits return (each wait returns the next
 * one); fetchJobStatus answers with `current()`. Every activity call is recorded.
 */
export interface FakeJob {
  activities: Partial<JobActivities>;
  calls: Call[];
  named(name: string): Call[];
  /** Resolves once the activity `name` has been called `times` times (the stub's own event). */
  called(name: keyof JobActivities, times?: number): Promise<void>;
}

export function observation(
  jobId: string,
  status: JobObservation['status'],
  extra: Partial<JobObservation> = {},
): JobObservation {
  return { jobId, status, observedAt: Date.now(), ...extra };
}

export function submitted(jobId: string, extra: Partial<SubmitResult> = {}): SubmitResult {
  return { jobId, status: 'IN_QUEUE', observedAt: Date.now(), webhookArmed: true, ...extra };
}

export function waitResult(
  jobId: string,
  status: JobObservation['status'],
  extra: Partial<WaitResult> = {},
): WaitResult {
  return { ...observation(jobId, status), reason: 'changed', polls: 1, ...extra };
}

type Impl<K extends keyof JobActivities> = (
  ...args: Parameters<JobActivities[K]>
) => ReturnType<JobActivities[K]>;

export function fakeJob(impl: Partial<{ [K in keyof JobActivities]: Impl<K> }>): FakeJob {
  const calls: Call[] = [];
  const activities: Partial<JobActivities> = {};
  const named = (name: string) => calls.filter((call) => call.name === name);
  /** Who waits for how many calls of which activity. */
  const waiters: Array<{ name: string; times: number; resolve: () => void }> = [];
  const record =
    <K extends keyof JobActivities>(name: K, fn: Impl<K>) =>
    (...args: Parameters<JobActivities[K]>) => {
      calls.push({ name, input: args[0], attempt: Context.current().info.attempt });
      const count = named(name).length;
      for (const waiter of waiters.filter((w) => w.name === name && w.times <= count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      return fn(...args);
    };
  const defaults: { [K in keyof JobActivities]: Impl<K> } = {
    webhooksArmed: async () => true,
    requestTtl: async () => ({}),
    submitJob: async () => submitted('job-1'),
    runJobSync: async () => ({
      ...observation('sync-1', 'COMPLETED', { output: { ok: true } }),
      webhookArmed: false,
    }),
    waitForJobChange: async (input) => waitResult(input.jobId, 'COMPLETED', { output: { ok: true } }),
    fetchJobStatus: async (input) => observation(input.jobId, 'COMPLETED', { output: { ok: true } }),
    cancelJob: async (): Promise<CancelJobResult> => ({ status: 'CANCELLED', gone: false }),
    retryJob: async (input) => observation(input.jobId, 'IN_QUEUE'),
    streamJob: async (): Promise<StreamResult> => ({ chunks: 0, batches: 0, finalStatus: 'COMPLETED' }),
  };
  for (const name of Object.keys(defaults) as Array<keyof JobActivities>) {
    const fn = (impl[name] ?? defaults[name]) as Impl<typeof name>;
    (activities as Record<string, unknown>)[name] = record(name, fn);
  }
  const called = (name: keyof JobActivities, times = 1) =>
    named(name).length >= times
      ? Promise.resolve()
      : new Promise<void>((resolve) => waiters.push({ name, times, resolve }));
  return { activities, calls, named, called };
}

/**
 * A poller that answers from a script: each call takes the next step; a status returns at once,
 * 'hang' polls until the workflow cancels it (as a real poller would while nothing changes) or
 * until the test calls release(), after which it answers with the next step.
 */
export function pollerScript(steps: Array<JobObservation['status'] | 'hang' | WaitResult>) {
  let index = 0;
  const state = { cancelled: 0, released: false };
  const take = () => steps[Math.min(index++, steps.length - 1)];
  const fn = async (input: Parameters<JobActivities['waitForJobChange']>[0]): Promise<WaitResult> => {
    let step = take();
    if (step === 'hang' || step === undefined) {
      const context = Context.current();
      try {
        while (!state.released) {
          context.heartbeat();
          await context.sleep(20);
        }
      } catch (error) {
        state.cancelled += 1;
        throw error;
      }
      state.released = false;
      step = take();
    }
    if (step === 'hang' || step === undefined)
      throw new Error('a released poller needs a status to answer with');
    return typeof step === 'string' ? waitResult(input.jobId, step) : step;
  };
  return Object.assign(fn, {
    get cancelled() {
      return state.cancelled;
    },
    release() {
      state.released = true;
    },
  });
}

export const DAY_MS = 24 * 60 * 60 * 1000;

/** Workflow time from start to end, from the snapshot (the server's clock may run on after). */
export async function workflowElapsed(handle: {
  query: (def: typeof jobSnapshotQuery) => Promise<JobSnapshot>;
}): Promise<number> {
  const { timings } = await handle.query(jobSnapshotQuery);
  return (timings.endedAt as number) - timings.startedAt;
}

/**
 * Waits, by the snapshot query, until the workflow is in `phase` (queries do not move the test
 * server's clock); returns that snapshot.
 */
export function untilPhase(
  handle: { query: (def: typeof jobSnapshotQuery) => Promise<JobSnapshot> },
  phase: JobSnapshot['phase'],
): Promise<JobSnapshot> {
  return waitFor(
    () => handle.query(jobSnapshotQuery),
    (snapshot) => snapshot.phase === phase,
    `phase ${phase}`,
  );
}
