/**
 * Submission and cancellation of the job workflow on the time-skipping server: the uncertain
 * submit both ways (fail, resubmit), a worker dying mid-submit (an activity timeout), adoption of
 * an orphan from its webhook, safe retries of submits that certainly were not sent, and
 * cancellation while submitting, queued, running and between retries.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { windowFull } from '../../activities/send-grant';
import { beatBeforeSending, submitBeats } from '../../activities/submit-beat';
import type { JobWorkflowInput } from '../../contracts/job-input';
import { noRoomRetryDelayMs, SUBMIT_RETRY } from '../../engine/job-rules';
import { jobSnapshotQuery, jobWebhookSignal } from '../../workflows/job/job-definitions';
import {
  bundleJobWorkflow,
  failureOf,
  fakeJob,
  jobTestEnv,
  neverAnswers,
  observation,
  pollerScript,
  quietRuntime,
  submitted,
  untilPhase,
  waitResult,
  withWorker,
  workflowElapsed,
} from './job-harness';
import type { serverlessJob } from './job-test-workflows';

quietRuntime();

const input = (extra: Partial<JobWorkflowInput> = {}): JobWorkflowInput => ({
  endpointId: 'ep-1',
  request: { input: { n: 1 } },
  ...extra,
});

const uncertain = () =>
  ApplicationFailure.create({
    type: 'SubmitUncertain',
    message: 'the run request may have reached the service (headers timeout)',
    nonRetryable: true,
    details: [{ operation: 'run', cause: 'Timeout', webhookArmed: true }],
  });

/** A gate a fake activity waits at until the test opens it: the test decides when it answers. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('job workflow: submission and cancellation', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  let id = 0;

  beforeAll(async () => {
    env = await jobTestEnv();
    bundle = await bundleJobWorkflow();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  const start = (taskQueue: string, args: JobWorkflowInput) =>
    env.client.workflow.start<typeof serverlessJob>('serverlessJob', {
      taskQueue,
      workflowId: `submit-wf-${++id}`,
      args: [args],
    });

  describe('an uncertain submit', () => {
    it('fails with SubmitUncertain by default, without sending again', async () => {
      const fake = fakeJob({
        submitJob: async () => {
          throw uncertain();
        },
      });
      const { failure, snapshot } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        const handle = await start(taskQueue, input());
        const failure = await failureOf(handle.result());
        return { failure, snapshot: await handle.query(jobSnapshotQuery) };
      });
      expect(failure.type).toBe('SubmitUncertain');
      expect(failure.nonRetryable).toBe(true);
      expect(failure.message).toContain('may have created a job whose id never arrived');
      expect(failure.message).toContain('orphan');
      expect(failure.details?.[0]).toMatchObject({ submissions: 1, uncertainSubmits: 1, jobIds: [] });
      expect(fake.named('submitJob')).toHaveLength(1);
      expect(snapshot).toMatchObject({
        phase: 'failed',
        uncertainSubmits: 1,
        failure: { type: 'SubmitUncertain' },
      });
    });

    it('submits again when the caller chose resubmit, and counts it', async () => {
      let calls = 0;
      const fake = fakeJob({
        submitJob: async () => {
          calls += 1;
          if (calls === 1) throw uncertain();
          return submitted('job-2');
        },
      });
      const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
        (await start(taskQueue, input({ onUncertainSubmit: 'resubmit' }))).result(),
      );
      expect(result).toMatchObject({
        jobId: 'job-2',
        submissions: 2,
        uncertainSubmits: 1,
        jobIds: ['job-2'],
      });
    });

    it('stops resubmitting at maxSubmissions', async () => {
      const fake = fakeJob({
        submitJob: async () => {
          throw uncertain();
        },
      });
      const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
        failureOf(
          (await start(taskQueue, input({ onUncertainSubmit: 'resubmit', maxSubmissions: 2 }))).result(),
        ),
      );
      expect(failure.type).toBe('SubmitUncertain');
      expect(failure.message).toContain('maxSubmissions (2) is reached');
      expect(fake.named('submitJob')).toHaveLength(2);
    });

    it('without a lease, treats a submit that never answers (a worker dead mid-submit) as uncertain, and never retries it', async () => {
      // The answer comes only once the workflow has ended: past the 1-second timeout, it is lost.
      const late = gate();
      const fake = fakeJob({
        submitJob: async () => {
          await beatBeforeSending(submitBeats(() => ({ sending: true })));
          await late.opened;
          return submitted('job-late');
        },
      });
      const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        try {
          return await failureOf(
            (await start(taskQueue, input({ submitTimeout: '1 second', submitLease: false }))).result(),
          );
        } finally {
          late.open();
        }
      });
      expect(failure.type).toBe('SubmitUncertain');
      expect(failure.message).toContain('ActivityTimeout');
      expect(fake.named('submitJob')).toHaveLength(1);
    });

    it('sends again a submit that timed out before its beat (the server lost the task): one job, nothing uncertain', async () => {
      // The first try never gets as far as its beat: a task the server recorded as started but
      // no worker received looks just like this to the workflow.
      let tries = 0;
      const fake = fakeJob({
        submitJob: async () => {
          tries += 1;
          if (tries === 1) await neverAnswers();
          return submitted('job-2');
        },
        waitForJobChange: pollerScript(['COMPLETED']),
      });
      const { result, history } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        const handle = await start(
          taskQueue,
          input({ submitTimeout: '1 second', onUncertainSubmit: 'fail' }),
        );
        return { result: await handle.result(), history: await handle.fetchHistory() };
      });
      expect(result).toMatchObject({ jobId: 'job-2', submissions: 1, uncertainSubmits: 0 });
      // A rejection, tried again after the submit's backoff: no lease to wait out, so no question
      // about the workers' webhooks, and one timer (the backoff) where a lease would add its own.
      expect(fake.named('webhooksArmed')).toHaveLength(0);
      expect((history.events ?? []).filter((event) => event.timerStartedEventAttributes)).toHaveLength(1);
      expect(fake.named('submitJob')).toHaveLength(2);
    });

    it("takes the job from a submit that timed out after its beat recorded the job's id: nothing uncertain", async () => {
      // The worker got the job's id and had the server record it, then died before answering.
      const fake = fakeJob({
        submitJob: async () => {
          await beatBeforeSending(
            submitBeats(() => ({ sending: true, webhookArmed: false, jobId: 'job-made' })),
          );
          return neverAnswers();
        },
        waitForJobChange: pollerScript(['COMPLETED']),
      });
      const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
        (
          await start(
            taskQueue,
            input({ submitTimeout: '1 second', submitLease: false, onUncertainSubmit: 'fail' }),
          )
        ).result(),
      );
      expect(result).toMatchObject({ jobId: 'job-made', submissions: 1, uncertainSubmits: 0 });
      expect(fake.named('submitJob')).toHaveLength(1);
      expect(fake.named('waitForJobChange')[0]?.input).toMatchObject({ jobId: 'job-made' });
    });

    it('adopts the orphan job when its webhook arrives within uncertainSubmitWait', async () => {
      const fake = fakeJob({
        submitJob: async () => {
          throw uncertain();
        },
        fetchJobStatus: async (req) => observation(req.jobId, 'COMPLETED', { output: 'orphan output' }),
      });
      const { result, snapshot } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        const handle = await start(taskQueue, input({ uncertainSubmitWait: '1 hour' }));
        await untilPhase(handle, 'adopting');
        await handle.signal(jobWebhookSignal, { jobId: 'orphan-7', status: 'COMPLETED' });
        const result = await handle.result();
        return { result, snapshot: await handle.query(jobSnapshotQuery) };
      });
      expect(result).toMatchObject({
        jobId: 'orphan-7',
        output: 'orphan output',
        submissions: 1,
        uncertainSubmits: 1,
      });
      expect(snapshot).toMatchObject({ adopted: true, jobIds: ['orphan-7'] });
      expect(fake.named('fetchJobStatus').map((call) => call.input)).toEqual([
        { endpointId: 'ep-1', jobId: 'orphan-7' },
      ]);
    });

    it('adopts a webhook that arrived while the submit was still in flight', async () => {
      const submit = gate();
      const fake = fakeJob({
        submitJob: async () => {
          await submit.opened;
          throw uncertain();
        },
        waitForJobChange: pollerScript(['COMPLETED']),
        fetchJobStatus: async (req) => observation(req.jobId, 'IN_PROGRESS'),
      });
      const result = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        try {
          const handle = await start(taskQueue, input());
          await fake.called('submitJob');
          // The signal is in the history before the submit can answer: it arrived mid-submit.
          await handle.signal(jobWebhookSignal, { jobId: 'orphan-8', status: 'IN_PROGRESS' });
          expect((await handle.query(jobSnapshotQuery)).phase).toBe('submitting');
          submit.open();
          return await handle.result();
        } finally {
          submit.open();
        }
      });
      expect(result).toMatchObject({ jobId: 'orphan-8', status: 'COMPLETED', uncertainSubmits: 1 });
    });

    it('does not wait for an orphan`s webhook when the request named none', async () => {
      const fake = fakeJob({
        submitJob: async () => {
          throw ApplicationFailure.create({
            type: 'SubmitUncertain',
            message: 'dropped after send',
            nonRetryable: true,
            details: [{ webhookArmed: false }],
          });
        },
      });
      const { failure, elapsed } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        const handle = await start(taskQueue, input({ uncertainSubmitWait: '1 hour' }));
        const failure = await failureOf(handle.result());
        return { failure, elapsed: await workflowElapsed(handle) };
      });
      expect(failure.type).toBe('SubmitUncertain');
      expect(elapsed).toBeLessThan(60 * 60_000);
    });

    it('does not adopt a job /status does not know; the window closes with SubmitUncertain', async () => {
      const fake = fakeJob({
        submitJob: async () => {
          throw uncertain();
        },
        fetchJobStatus: async () => {
          throw ApplicationFailure.create({ type: 'JobExpired', message: '404', nonRetryable: true });
        },
      });
      const { failure, elapsed } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        const handle = await start(taskQueue, input({ uncertainSubmitWait: '10 minutes' }));
        await handle.signal(jobWebhookSignal, { jobId: 'forged-1', status: 'COMPLETED' });
        const failure = await failureOf(handle.result());
        return { failure, elapsed: await workflowElapsed(handle) };
      });
      expect(failure.type).toBe('SubmitUncertain');
      expect(elapsed).toBeGreaterThanOrEqual(10 * 60_000);
    });
  });

  describe('a submit that certainly was not sent', () => {
    /** A job run to its end with these activities: its result and its time in the workflow. */
    const resultAndElapsed = (activities: ReturnType<typeof fakeJob>['activities']) =>
      withWorker(env, bundle, activities, async (taskQueue) => {
        const handle = await start(taskQueue, input());
        const result = await handle.result();
        return { result, elapsed: await workflowElapsed(handle) };
      });

    it('is retried by the workflow, honouring Retry-After, and counts as one submission', async () => {
      let calls = 0;
      const fake = fakeJob({
        submitJob: async () => {
          calls += 1;
          if (calls <= 2) {
            throw ApplicationFailure.create({
              type: 'RateLimited',
              message: 'HTTP 429',
              nonRetryable: false,
              details: [{ operation: 'run', status: 429, retryAfterMs: 30_000 }],
            });
          }
          return submitted('job-1');
        },
      });
      const { result, elapsed } = await resultAndElapsed(fake.activities);
      expect(result).toMatchObject({ jobId: 'job-1', submissions: 1, uncertainSubmits: 0 });
      expect(fake.named('submitJob')).toHaveLength(3);
      expect(fake.named('submitJob').map((call) => call.attempt)).toEqual([1, 1, 1]);
      expect(elapsed).toBeGreaterThanOrEqual(60_000);
    });

    it('waits out a gate with no room for as long as it lasts (a paused endpoint), past the rejected submit’s tries', async () => {
      const refusals = SUBMIT_RETRY.maximumAttempts + 4;
      let calls = 0;
      const fake = fakeJob({
        submitJob: async () => {
          calls += 1;
          if (calls <= refusals) throw windowFull('ep-1');
          return submitted('job-1');
        },
      });
      const { result, elapsed } = await resultAndElapsed(fake.activities);
      expect(result).toMatchObject({ jobId: 'job-1', submissions: 1, uncertainSubmits: 0 });
      expect(fake.named('submitJob')).toHaveLength(refusals + 1);
      // The pauses between tries grow to a minute: a long pause costs a try a minute, not more.
      const pauses = Array.from({ length: refusals }, (_, tries) => noRoomRetryDelayMs(tries + 1));
      expect(pauses.slice(-3)).toEqual([60_000, 60_000, 60_000]);
      expect(elapsed).toBeGreaterThanOrEqual(pauses.reduce((sum, pause) => sum + pause, 0));
    });

    it.each([
      ['BadRequest', { field: 'input', rule: 'must be a JSON object' }],
      ['Unauthorized', { operation: 'run', status: 401 }],
      ['NotFound', { operation: 'run', status: 404 }],
    ])('fails at once on %s', async (type, facts) => {
      const fake = fakeJob({
        submitJob: async () => {
          throw ApplicationFailure.create({
            type,
            message: `refused: ${type}`,
            nonRetryable: true,
            details: [facts],
          });
        },
      });
      const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
        failureOf((await start(taskQueue, input())).result()),
      );
      expect(failure.type).toBe(type);
      expect(failure.message).toContain(`refused: ${type}`);
      expect(failure.details?.[0]).toMatchObject({ submissions: 0, uncertainSubmits: 0 });
      if ('field' in facts) expect(failure.details?.[0]).toMatchObject(facts);
      expect(fake.named('submitJob')).toHaveLength(1);
    });
  });

  describe('cancellation', () => {
    const cancelled = async (promise: Promise<unknown>) => {
      const error = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(WorkflowFailedError);
      expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    };

    it('cancels a queued job before ending as cancelled', async () => {
      const fake = fakeJob({ waitForJobChange: pollerScript(['hang']) });
      const snapshot = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        const handle = await start(taskQueue, input());
        await fake.called('waitForJobChange');
        await handle.cancel();
        await cancelled(handle.result());
        expect((await handle.describe()).status.name).toBe('CANCELLED');
        return handle.query(jobSnapshotQuery);
      });
      expect(fake.named('cancelJob').map((call) => call.input)).toEqual([
        { endpointId: 'ep-1', jobId: 'job-1' },
      ]);
      expect(snapshot).toMatchObject({
        phase: 'cancelled',
        status: 'CANCELLED',
        remoteCancel: { sent: true, status: 'CANCELLED' },
      });
    });

    it('cancels a running job', async () => {
      const fake = fakeJob({ waitForJobChange: pollerScript(['IN_PROGRESS', 'hang']) });
      await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        const handle = await start(taskQueue, input());
        await fake.called('waitForJobChange', 2);
        await handle.cancel();
        await cancelled(handle.result());
      });
      expect(fake.named('cancelJob')).toHaveLength(1);
    });

    it('lets a submit in flight finish, then cancels the job it created', async () => {
      const submit = gate();
      const fake = fakeJob({
        submitJob: async () => {
          await submit.opened;
          return submitted('job-9');
        },
      });
      await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        try {
          const handle = await start(taskQueue, input());
          await fake.called('submitJob');
          // The cancellation is recorded while the submit still holds the answer back.
          await handle.cancel();
          expect((await handle.query(jobSnapshotQuery)).phase).toBe('submitting');
          submit.open();
          await cancelled(handle.result());
        } finally {
          submit.open();
        }
      });
      expect(fake.named('cancelJob').map((call) => call.input)).toEqual([
        { endpointId: 'ep-1', jobId: 'job-9' },
      ]);
      expect(fake.named('waitForJobChange')).toHaveLength(0);
    });

    it('sends no cancel for a job that has already finished (between retries)', async () => {
      const fake = fakeJob({ waitForJobChange: pollerScript(['FAILED']) });
      const snapshot = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        const handle = await start(taskQueue, input({ retry: { maxRetries: 1, initialInterval: '1 day' } }));
        await untilPhase(handle, 'retry-backoff');
        await handle.cancel();
        await cancelled(handle.result());
        return handle.query(jobSnapshotQuery);
      });
      expect(fake.named('cancelJob')).toHaveLength(0);
      expect(fake.named('retryJob')).toHaveLength(0);
      expect(snapshot).toMatchObject({ phase: 'cancelled', status: 'FAILED', remoteCancel: { sent: false } });
    });

    it('still ends as cancelled when the cancel call fails, and says so', async () => {
      const fake = fakeJob({
        waitForJobChange: pollerScript(['hang']),
        cancelJob: async () => {
          throw ApplicationFailure.create({ type: 'Unauthorized', message: 'HTTP 401', nonRetryable: true });
        },
      });
      const snapshot = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        const handle = await start(taskQueue, input());
        await fake.called('waitForJobChange');
        await handle.cancel();
        await cancelled(handle.result());
        return handle.query(jobSnapshotQuery);
      });
      expect(snapshot.remoteCancel).toMatchObject({ sent: true, error: 'HTTP 401' });
    });

    it('fails with JobCancelled when someone else cancelled the remote job', async () => {
      const fake = fakeJob({ waitForJobChange: pollerScript([waitResult('job-1', 'CANCELLED')]) });
      const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
        failureOf((await start(taskQueue, input())).result()),
      );
      expect(failure.type).toBe('JobCancelled');
      expect(fake.named('cancelJob')).toHaveLength(0);
    });
  });
});
