/**
 * The job workflow on the time-skipping server with mocked activities: completion, the two roads
 * of waiting (webhook and polling), the snapshot, search attributes, modes, streaming, the result
 * store and input validation. Retries/expiry and submission/cancellation have files of their own.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobActivities } from '../../activities/job';
import type { ServiceClient } from '../../api/client';
import type { JobWorkflowInput } from '../../contracts/job-input';
import type { JobResult } from '../../contracts/job-snapshot';
import { signWebhookToken, webhookUrlFactory } from '../../worker/webhook-token';
import { jobSnapshotQuery, jobWebhookSignal } from '../../workflows/job/job-definitions';
import { endpointIdKey, jobIdKey, jobStatusKey } from '../../workflows/shared/search-attributes';
import { historyText } from '../support/history';
import { tempDir } from '../support/temp-dir';
import { uniqueTaskQueue } from '../support/temporal';
import {
  bundleJobWorkflow,
  failureOf,
  fakeJob,
  jobTestEnv,
  observation,
  pollerScript,
  quietRuntime,
  waitResult,
  withWorker,
} from './job-harness';
import type { jobParent, serverlessJob } from './job-test-workflows';
import { until } from './wait-for';

quietRuntime();

const input = (extra: Partial<JobWorkflowInput> = {}): JobWorkflowInput => ({
  endpointId: 'ep-1',
  request: { input: { prompt: 'hello' } },
  ...extra,
});

describe('job workflow: completion and waiting', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;
  let id = 0;
  const workflowId = () => `job-wf-${++id}`;

  beforeAll(async () => {
    env = await jobTestEnv();
    bundle = await bundleJobWorkflow();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  const start = (taskQueue: string, args: JobWorkflowInput, wid = workflowId()) =>
    env.client.workflow.start<typeof serverlessJob>('serverlessJob', {
      taskQueue,
      workflowId: wid,
      args: [args],
    });

  it('submits once, follows the job to COMPLETED and returns its output', async () => {
    const poller = pollerScript([
      'IN_PROGRESS',
      waitResult('job-1', 'COMPLETED', { output: { text: 'hi' }, delayTime: 5, executionTime: 9 }),
    ]);
    const fake = fakeJob({ waitForJobChange: poller });
    const { result, snapshot, attributes, events } = await withWorker(
      env,
      bundle,
      fake.activities,
      async (taskQueue) => {
        const handle = await start(taskQueue, input());
        const result = await handle.result();
        const description = await handle.describe();
        return {
          result,
          snapshot: await handle.query(jobSnapshotQuery),
          attributes: description.typedSearchAttributes,
          events: (await handle.fetchHistory()).events?.length ?? 0,
        };
      },
    );

    expect(result).toEqual({
      endpointId: 'ep-1',
      jobId: 'job-1',
      status: 'COMPLETED',
      output: { text: 'hi' },
      delayTime: 5,
      executionTime: 9,
      attempts: 1,
      retries: 0,
      submissions: 1,
      uncertainSubmits: 0,
      jobIds: ['job-1'],
    } satisfies JobResult);
    expect(fake.named('submitJob')).toHaveLength(1);
    // The request goes to the activity as the caller gave it: no webhook, no filled-in policy; the
    // default lease rides beside it, for the activity to apply if it arms a webhook.
    expect(fake.named('submitJob')[0]?.input).toEqual({
      endpointId: 'ep-1',
      request: { input: { prompt: 'hello' } },
      lease: { ttlMs: 60_000, onlyWithWebhook: true },
    });
    // One wait per status change: IN_QUEUE -> IN_PROGRESS -> COMPLETED.
    expect(
      fake.named('waitForJobChange').map((call) => (call.input as { knownStatus: string }).knownStatus),
    ).toEqual(['IN_QUEUE', 'IN_PROGRESS']);
    expect(snapshot).toMatchObject({
      phase: 'completed',
      status: 'COMPLETED',
      jobId: 'job-1',
      jobIds: ['job-1'],
      attempts: 1,
      submissions: 1,
      uncertainSubmits: 0,
    });
    expect(snapshot.timings.submittedAt).toBeTypeOf('number');
    expect(snapshot.timings.runningAt).toBeTypeOf('number');
    expect(snapshot.timings.finishedAt).toBeTypeOf('number');
    // The default ttl (24 h) from submission.
    expect(snapshot.timings.ttlDeadline).toBe((snapshot.timings.submittedAt as number) + 86_400_000);
    expect(attributes.get(endpointIdKey)).toBe('ep-1');
    expect(attributes.get(jobIdKey)).toEqual(['job-1']);
    expect(attributes.get(jobStatusKey)).toBe('COMPLETED');
    expect(events).toBeLessThan(40);
  });

  it('passes the ttl, the polling schedule and the deadline to the poller', async () => {
    const fake = fakeJob({});
    const snapshot = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input({ request: { input: {}, policy: { ttl: 3_600_000 } } }));
      await handle.result();
      return handle.query(jobSnapshotQuery);
    });
    const wait = fake.named('waitForJobChange')[0]?.input as { returnBy: number; polling: unknown };
    expect(wait.polling).toEqual({
      initialIntervalMs: 1_000,
      maxIntervalMs: 30_000,
      backoffCoefficient: 1.5,
    });
    // The deadline is the ttl from submission; the poller returns 5 s before it.
    expect(snapshot.timings.ttlDeadline).toBe((snapshot.timings.submittedAt as number) + 3_600_000);
    expect(wait.returnBy).toBe((snapshot.timings.ttlDeadline as number) - 5_000);
    expect(fake.named('submitJob')[0]?.input).toMatchObject({
      request: { input: {}, policy: { ttl: 3_600_000 } },
    });
  });

  it("asks the poller to return only at the job's end, or at each change with recordStart", async () => {
    const returnOn = async (extra: Partial<JobWorkflowInput>) => {
      const fake = fakeJob({});
      await withWorker(env, bundle, fake.activities, async (taskQueue) => {
        await (await start(taskQueue, input(extra))).result();
      });
      return fake.named('waitForJobChange').map((call) => (call.input as { returnOn: string }).returnOn);
    };
    expect(await returnOn({})).toEqual(['end']);
    expect(await returnOn({ recordStart: true })).toEqual(['change']);
  });

  it('finishes on the webhook when it comes first, confirmed by /status, and cancels the poller', async () => {
    const poller = pollerScript(['hang']);
    const fake = fakeJob({
      waitForJobChange: poller,
      fetchJobStatus: async (req) => observation(req.jobId, 'COMPLETED', { output: 'from status' }),
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input());
      await fake.called('waitForJobChange');
      await handle.signal(jobWebhookSignal, { jobId: 'job-1', status: 'COMPLETED' });
      const result = await handle.result();
      return { result, history: await handle.fetchHistory() };
    });
    expect(result.result.output).toBe('from status');
    expect(fake.named('fetchJobStatus')).toHaveLength(1);
    // The workflow asked for the poller's cancellation (it learns of it at its next heartbeat).
    expect(result.history.events?.some((event) => event.activityTaskCancelRequestedEventAttributes)).toBe(
      true,
    );
  });

  it("reads the poller's answer that came with a webhook before checking the webhook with /status", async () => {
    // The poller's answer and the webhook must reach the workflow in one workflow task: the
    // workflow's worker is stopped while the poller (on a worker of activities alone) answers and
    // the webhook is sent, then a new workflow worker takes both at once.
    const poller = pollerScript(['hang', 'COMPLETED']);
    const fake = fakeJob({ waitForJobChange: poller });
    const taskQueue = uniqueTaskQueue('wf');
    // No cache, so no sticky queue: the next workflow task goes to whichever worker comes.
    const workflowWorker = () =>
      Worker.create({
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: bundle,
        activities: fake.activities,
        enableNonLocalActivities: false,
        maxCachedWorkflows: 0,
      });
    const activityWorker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      activities: fake.activities,
    });
    const { result, history } = await activityWorker.runUntil(async () => {
      const handle = await start(taskQueue, input());
      await (await workflowWorker()).runUntil(fake.called('waitForJobChange'));
      const completedActivities = async () =>
        ((await handle.fetchHistory()).events ?? []).filter(
          (event) => event.activityTaskCompletedEventAttributes,
        ).length;
      const before = await completedActivities();
      poller.release();
      await until(async () => (await completedActivities()) > before, 'the poller answered');
      await handle.signal(jobWebhookSignal, { jobId: 'job-1', status: 'COMPLETED' });
      const result = await (await workflowWorker()).runUntil(handle.result());
      return { result, history: await handle.fetchHistory() };
    });
    expect(result.status).toBe('COMPLETED');
    expect(fake.named('fetchJobStatus')).toHaveLength(0);
    expect(history.events?.some((event) => event.markerRecordedEventAttributes)).toBe(false);
  });

  it('finishes by polling alone when no webhook comes (a lost webhook costs latency, not the result)', async () => {
    const fake = fakeJob({ waitForJobChange: pollerScript(['IN_PROGRESS', 'COMPLETED']) });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (await start(taskQueue, input())).result(),
    );
    expect(result.status).toBe('COMPLETED');
    expect(fake.named('fetchJobStatus')).toHaveLength(0);
  });

  it('treats a webhook as a hint: /status disagreeing leaves the poller in charge', async () => {
    const poller = pollerScript(['hang', 'COMPLETED']);
    const fake = fakeJob({
      waitForJobChange: poller,
      fetchJobStatus: async (req) => observation(req.jobId, 'IN_PROGRESS'),
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input());
      await fake.called('waitForJobChange');
      // Claims COMPLETED; /status says IN_PROGRESS: that is a change too, and the wait restarts from there.
      await handle.signal(jobWebhookSignal, { jobId: 'job-1', status: 'COMPLETED' });
      return handle.result();
    });
    expect(result.status).toBe('COMPLETED');
    expect(
      fake.named('waitForJobChange').map((call) => (call.input as { knownStatus: string }).knownStatus),
    ).toEqual(['IN_QUEUE', 'IN_PROGRESS']);
  });

  it('ignores duplicate, stale and foreign webhooks', async () => {
    const poller = pollerScript(['hang', 'COMPLETED']);
    let statusCalls = 0;
    const fake = fakeJob({
      waitForJobChange: poller,
      fetchJobStatus: async (req) => {
        statusCalls += 1;
        return observation(req.jobId, 'IN_QUEUE');
      },
    });
    const snapshot = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input());
      await fake.called('waitForJobChange');
      // Same status as known: nothing to confirm.
      await handle.signal(jobWebhookSignal, { jobId: 'job-1', status: 'IN_QUEUE' });
      await handle.signal(jobWebhookSignal, { jobId: 'job-1', status: 'IN_QUEUE' });
      // Another job (an orphan): recorded, never followed.
      await handle.signal(jobWebhookSignal, { jobId: 'stray-9', status: 'COMPLETED' });
      // A claim /status does not back: one look, no change; the same claim again: no second look.
      await handle.signal(jobWebhookSignal, { jobId: 'job-1', status: 'FAILED' });
      await fake.called('fetchJobStatus');
      await handle.signal(jobWebhookSignal, { jobId: 'job-1', status: 'FAILED' });
      const mid = await handle.query(jobSnapshotQuery);
      expect(mid).toMatchObject({
        phase: 'waiting',
        status: 'IN_QUEUE',
        strayJobIds: ['stray-9'],
      });
      poller.release();
      await handle.result();
      return handle.query(jobSnapshotQuery);
    });
    expect(snapshot.webhooks).toBe(5);
    expect(statusCalls).toBe(1);
    expect(snapshot).toMatchObject({ status: 'COMPLETED', jobIds: ['job-1'], strayJobIds: ['stray-9'] });
  });

  it('answers the snapshot query while the job runs', async () => {
    const poller = pollerScript([
      waitResult('job-1', 'IN_PROGRESS', { progress: { step: 3, of: 10 }, delayTime: 1200 }),
      'hang',
      'COMPLETED',
    ]);
    const fake = fakeJob({ waitForJobChange: poller });
    await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input({ request: { input: {}, policy: { ttl: 7_200_000 } } }));
      await fake.called('waitForJobChange', 2);
      const snapshot = await handle.query(jobSnapshotQuery);
      expect(snapshot).toMatchObject({
        endpointId: 'ep-1',
        mode: 'async',
        phase: 'waiting',
        status: 'IN_PROGRESS',
        jobId: 'job-1',
        jobIds: ['job-1'],
        attempts: 1,
        retries: 0,
        submissions: 1,
        uncertainSubmits: 0,
        adopted: false,
        progress: { step: 3, of: 10 },
        delayTime: 1200,
      });
      expect(snapshot.timings.ttlDeadline).toBe((snapshot.timings.submittedAt as number) + 7_200_000);
      expect((await handle.describe()).typedSearchAttributes.get(jobStatusKey)).toBe('IN_PROGRESS');
      poller.release();
      await handle.result();
    });
  });

  it('returns a result store reference instead of a large output', async () => {
    const outputRef = {
      kind: 'serverless-result-ref' as const,
      store: 'local',
      key: 'wf/job-1',
      bytes: 5_000_000,
      sha256: 'a'.repeat(64),
    };
    const fake = fakeJob({
      waitForJobChange: async (req) => waitResult(req.jobId, 'COMPLETED', { outputRef }),
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (await start(taskQueue, input({ outputInlineMaxBytes: 1000 }))).result(),
    );
    expect(result.outputRef).toEqual(outputRef);
    expect(result).not.toHaveProperty('output');
    expect(fake.named('waitForJobChange')[0]?.input).toMatchObject({ inlineMaxBytes: 1000 });
  });

  it('sync mode: /run with a fast polling schedule', async () => {
    const fake = fakeJob({});
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (await start(taskQueue, input({ mode: 'sync', polling: { maxInterval: 1_000 } }))).result(),
    );
    expect(result.status).toBe('COMPLETED');
    expect(fake.named('submitJob')).toHaveLength(1);
    expect(fake.named('runJobSync')).toHaveLength(0);
    expect(fake.named('waitForJobChange')[0]?.input).toMatchObject({
      polling: { initialIntervalMs: 200, maxIntervalMs: 1_000, backoffCoefficient: 1.5 },
    });
  });

  it('runsync mode: a final answer needs no waiting', async () => {
    const fake = fakeJob({
      runJobSync: async () => ({
        ...observation('sync-1', 'COMPLETED', { output: [1, 2] }),
        webhookArmed: false,
      }),
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (await start(taskQueue, input({ mode: 'runsync', runsyncWait: 5_000 }))).result(),
    );
    expect(result).toMatchObject({ jobId: 'sync-1', output: [1, 2], submissions: 1 });
    expect(fake.named('runJobSync')[0]?.input).toMatchObject({ wait: 5_000 });
    expect(fake.named('submitJob')).toHaveLength(0);
    expect(fake.named('waitForJobChange')).toHaveLength(0);
  });

  it('runsync mode: when the wait runs out first, the job is followed like any other', async () => {
    const fake = fakeJob({
      runJobSync: async () => ({ ...observation('sync-2', 'IN_PROGRESS'), webhookArmed: false }),
    });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      (await start(taskQueue, input({ mode: 'runsync' }))).result(),
    );
    expect(result).toMatchObject({ jobId: 'sync-2', status: 'COMPLETED' });
    expect(fake.named('waitForJobChange')[0]?.input).toMatchObject({
      jobId: 'sync-2',
      knownStatus: 'IN_PROGRESS',
    });
  });

  it('streams into the chosen sink beside the wait; chunks never reach the workflow', async () => {
    // The real stream activity over a stubbed /stream that hands out chunks in two batches: had
    // the activity returned them (or the workflow kept them), their text would be in the history.
    const chunkText = (i: number) => `streamed-chunk-${i}-that-stays-out-of-history`;
    const batches = [[0, 1, 2], [3, 4], []].map((batch) =>
      batch.map((i) => ({ output: { text: [chunkText(i)] } })),
    );
    let streamCalls = 0;
    const service = {
      jobs: {
        stream: async () => ({ chunks: batches[Math.min(streamCalls++, batches.length - 1)] ?? [] }),
        status: async (_endpointId: string, jobId: string) => ({ id: jobId, status: 'COMPLETED' as const }),
      },
    } as unknown as Pick<ServiceClient, 'jobs'>;
    const streamDir = tempDir('job-stream');
    const real = createJobActivities({ client: service, streamDir });
    const fake = fakeJob({
      waitForJobChange: pollerScript(['IN_PROGRESS', 'COMPLETED']),
      streamJob: (req) => real.streamJob(req),
    });
    const { result, history } = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(
        taskQueue,
        input({ stream: { sink: { kind: 'file', name: 'job-1.jsonl' } } }),
      );
      const result = await handle.result();
      return { result, history: historyText(await handle.fetchHistory()) };
    });
    expect(result.stream).toEqual({ chunks: 5 });
    expect(fake.named('streamJob')[0]?.input).toMatchObject({
      endpointId: 'ep-1',
      jobId: 'job-1',
      sink: { kind: 'file', name: 'job-1.jsonl' },
      firstIndex: 0,
    });
    // Every chunk reached the sink, in order...
    const lines = readFileSync(path.join(streamDir, 'job-1.jsonl'), 'utf8').trim().split('\n');
    expect(lines.map((line) => JSON.parse(line).output.text[0])).toEqual([0, 1, 2, 3, 4].map(chunkText));
    // ...and none of them the history, whose payloads (decoded) do hold the job's own values.
    expect(history).toContain('"prompt":"hello"');
    expect(history).toContain('job-1.jsonl');
    for (const i of [0, 1, 2, 3, 4]) expect(history).not.toContain(chunkText(i));
    expect(history).not.toContain('"chunks":[');
  });

  it('a signal sink without a workflow id signals the parent workflow', async () => {
    const fake = fakeJob({ streamJob: async () => ({ chunks: 2, batches: 1, finalStatus: 'COMPLETED' }) });
    const result = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      env.client.workflow.execute<typeof jobParent>('jobParent', {
        taskQueue,
        workflowId: 'parent-1',
        args: [input({ stream: { sink: { kind: 'signal' } } })],
      }),
    );
    expect(result.stream).toEqual({ chunks: 2 });
    expect(fake.named('streamJob')[0]?.input).toMatchObject({
      sink: { kind: 'signal', workflowId: 'parent-1' },
    });
  });

  it('a signal sink without a workflow id and without a parent is a BadRequest', async () => {
    const fake = fakeJob({});
    const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      failureOf((await start(taskQueue, input({ stream: { sink: { kind: 'signal' } } }))).result()),
    );
    expect(failure.type).toBe('BadRequest');
    expect(fake.calls).toHaveLength(0);
  });

  it.each([
    ['a missing endpoint id', { request: { input: {} } }, 'endpointId'],
    [
      'a webhook in the request',
      { endpointId: 'ep', request: { input: {}, webhook: 'https://x.test/h' } },
      'request',
    ],
    [
      'a ttl out of range',
      { endpointId: 'ep', request: { input: {}, policy: { ttl: 5 } } },
      'request.policy.ttl',
    ],
    ['a bad duration', { endpointId: 'ep', request: { input: {} }, submitTimeout: 'soon' }, 'submitTimeout'],
    [
      'streaming with runsync',
      {
        endpointId: 'ep',
        request: { input: {} },
        mode: 'runsync',
        stream: { sink: { kind: 'file', name: 'x' } },
      },
      'stream',
    ],
  ])('fails at once with BadRequest on %s', async (_what, bad, field) => {
    const fake = fakeJob({});
    const failure = await withWorker(env, bundle, fake.activities, async (taskQueue) =>
      failureOf(start(taskQueue, bad as JobWorkflowInput).then((handle) => handle.result())),
    );
    expect(failure.type).toBe('BadRequest');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details?.[0]).toMatchObject({ field });
    expect(fake.calls).toHaveLength(0);
  });

  it("keeps the history's length independent of the number of polls", async () => {
    const eventsFor = async (polls: number) => {
      const fake = fakeJob({
        waitForJobChange: async (req) => {
          // A long wait: many polls, each one a heartbeat, none of them history.
          const { Context } = await import('@temporalio/activity');
          for (let i = 0; i < polls; i++) {
            Context.current().heartbeat({
              jobId: req.jobId,
              knownStatus: req.knownStatus,
              polls: i + 1,
              intervalMs: 1000,
            });
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
          return waitResult(req.jobId, 'COMPLETED', { polls });
        },
      });
      return withWorker(env, bundle, fake.activities, async (taskQueue) => {
        const handle = await start(taskQueue, input());
        await handle.result();
        return (await handle.fetchHistory()).events?.length ?? 0;
      });
    };
    expect(await eventsFor(60)).toBe(await eventsFor(1));
  });

  it('submits with the workflow id only: the webhook URL is made in the worker', async () => {
    // The real submit activity, with the worker's webhook URLs, over a stubbed /run.
    const secret = 'job-test-webhook-secret-0123456789abcdef';
    const sent: Array<{ webhook?: string }> = [];
    const service = {
      jobs: {
        run: async (_endpointId: string, body: { webhook?: string }) => {
          sent.push(body);
          return { id: 'job-1', status: 'IN_QUEUE' as const };
        },
      },
    } as unknown as Pick<ServiceClient, 'jobs'>;
    const real = createJobActivities({
      client: service,
      webhookUrlFor: webhookUrlFactory('https://hooks.example.test', secret),
    });
    const fake = fakeJob({ submitJob: (req) => real.submitJob(req) });
    const wid = workflowId();
    const history = await withWorker(env, bundle, fake.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input(), wid);
      await handle.result();
      return historyText(await handle.fetchHistory());
    });
    // The request that went out did carry this workflow's webhook URL and its token...
    expect(sent).toHaveLength(1);
    const expiresAt = Number(new URL(sent[0]?.webhook ?? 'http://none').searchParams.get('exp'));
    const token = signWebhookToken(secret, wid, { expiresAt });
    expect(sent[0]?.webhook).toBe(
      `https://hooks.example.test/webhooks/${wid}?token=${token}&exp=${expiresAt}`,
    );
    // ...the decoded history holds the request as given, and none of the webhook.
    expect(history).toContain('"prompt":"hello"');
    expect(history).toContain('"webhookArmed":true');
    expect(history).not.toContain('webhook"');
    expect(history).not.toContain('hooks.example.test');
    expect(history).not.toContain('token=');
    expect(history).not.toContain(token);
    expect(history).not.toContain(secret);
  });
});
