/**
 * The job workflow on a route on the real stack (dev server, emulator over HTTP, real worker and
 * gateway): a job starved in the queue of its first endpoint is withdrawn and completes on the
 * next one, run once in all; a job that started before its withdrawal stays where it runs; a
 * capacity failure moves to the next endpoint instead of a retry.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob, getJobSnapshot } from '../../client/jobs';
import { eventually, FAST_POLLING, historyText, type JobStack, startJobStack } from '../support/integration';

/** A poller that looks once and then sleeps a minute: only the route's look sees a start. */
const SLOW_POLLING = { initialInterval: 60_000, maxInterval: 60_000, backoffCoefficient: 1 };

describe('job workflow on a route (dev server, emulator over HTTP, real worker and gateway)', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'job-route', timeScale: 100, webhooks: true });
  });
  afterEach(() => {
    stack?.control.resume();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('a job starved on a is withdrawn after queueDelayLimit and completes on b, with one run in all', async () => {
    const a = stack.endpoint();
    const b = stack.endpoint();
    stack.control.starveEndpoint(a);
    const handle = await stack.start({
      route: {
        endpoints: [{ endpointId: a }, { endpointId: b, inputOverrides: { output: 'from b' } }],
        queueDelayLimit: '5 seconds',
      },
      request: { input: { sleepMs: 1_000, output: 'from a' } },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    const onA = stack.control.jobs(a);
    const onB = stack.control.jobs(b);
    expect(onA).toHaveLength(1);
    expect(onB).toHaveLength(1);
    // Cancelled while queued, never started; the one run is on b, with b's input override.
    expect(onA[0]).toMatchObject({ status: 'CANCELLED', attempts: 0 });
    expect(onA[0]?.startedAt).toBeUndefined();
    expect(onA[0]?.executionTime ?? 0).toBe(0);
    expect(onB[0]).toMatchObject({ status: 'COMPLETED', attempts: 1, input: { output: 'from b' } });
    const [jobA, jobB] = [onA[0]?.id as string, onB[0]?.id as string];
    expect(result).toMatchObject({
      endpointId: b,
      jobId: jobB,
      output: 'from b',
      submissions: 2,
      jobIds: [jobA, jobB],
      hops: [{ from: a, to: b, jobId: jobA, reason: 'starved' }],
    });
    expect(result.hops).toHaveLength(1);
    const snapshot = await getJobSnapshot(stack.client, { workflowId: handle.workflowId });
    expect(snapshot).toMatchObject({ phase: 'completed', endpointId: b, hops: result.hops });
    // It waited out its limit on a before it moved (workflow time).
    expect((result.hops?.[0]?.at as number) - snapshot.timings.startedAt).toBeGreaterThanOrEqual(5_000);
  });

  it('a job that started on a before its withdrawal stays there and completes on a', async () => {
    // One worker: once it runs the job, a has no idle worker, so the route's look tries to withdraw it.
    const a = stack.endpoint({ workersMax: 1 });
    const b = stack.endpoint();
    // Service time stands still until the poller has had its one look at the queued job.
    stack.control.freeze();
    const handle = await stack.start({
      // Room for the test to start the job (it has seconds to spare) before the route's look.
      route: { endpoints: [{ endpointId: a }, { endpointId: b }], queueDelayLimit: '15 seconds' },
      request: { input: { sleepMs: 60_000, output: 'from a' } },
      polling: SLOW_POLLING,
    });
    const looked = await eventually(async () => {
      const snapshot = await getJobSnapshot(stack.client, {
        workflowId: handle.workflowId,
        live: true,
      }).catch(() => undefined);
      return snapshot?.live && snapshot.live.polls >= 1 ? snapshot : undefined;
    });
    expect(looked).toMatchObject({ status: 'IN_QUEUE', phase: 'waiting', endpointId: a });
    stack.control.advance(5_000); // the cold start: the job runs on a's one worker
    const [started] = stack.control.jobs(a);
    expect(started?.status).toBe('IN_PROGRESS');

    // At its queueDelayLimit the workflow finds a without an idle worker; the withdrawal sees the
    // job running and leaves it there.
    await eventually(async () => historyText(await handle.fetchHistory()).includes('"outcome":"started"'));
    stack.control.advance(60_000); // its run ends; the webhook tells the workflow
    const result = await awaitJob(stack.client, { job: handle });

    expect(result).toMatchObject({
      endpointId: a,
      jobId: started?.id,
      output: 'from a',
      submissions: 1,
      jobIds: [started?.id],
      hops: [],
    });
    expect(stack.control.jobs(a)).toMatchObject([{ status: 'COMPLETED', attempts: 1 }]);
    expect(stack.control.jobs(b)).toHaveLength(0);
    expect(stack.control.submissions(b)).toBe(0);
  });

  it('a capacity failure on a moves the job to b instead of a retry on a', async () => {
    // Every input runs out of GPU memory on a (its override sets the share to all of them).
    const a = stack.endpoint({ templateId: 'oom', gpuIds: 'AMPERE_16' });
    const b = stack.endpoint();
    const handle = await stack.start({
      route: {
        endpoints: [{ endpointId: a, inputOverrides: { oomShare: 1 } }, { endpointId: b }],
        capacityFailures: ['out of memory'],
      },
      request: { input: { sleepMs: 1_000, output: 'done' } },
      retry: { maxRetries: 2 },
      polling: FAST_POLLING,
    });
    const result = await awaitJob(stack.client, { job: handle });

    const onA = stack.control.jobs(a);
    const onB = stack.control.jobs(b);
    expect(onA).toMatchObject([{ status: 'FAILED', retries: 0 }]);
    expect(onA[0]?.error).toContain('CUDA out of memory');
    expect(onB).toMatchObject([{ status: 'COMPLETED', attempts: 1 }]);
    expect(result).toMatchObject({
      endpointId: b,
      jobId: onB[0]?.id,
      output: 'done',
      retries: 0,
      jobIds: [onA[0]?.id, onB[0]?.id],
      hops: [{ from: a, to: b, jobId: onA[0]?.id, reason: 'capacity-failure' }],
    });
    expect(result.hops).toHaveLength(1);
  });
});
