import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError } from '../../api/errors';
import { startTeardownEndpoint, teardownEndpoint } from '../../client/endpoints';
import { endpointLifecycleQuery } from '../../workflows/endpoint/endpoint-definitions';
import {
  API_KEY,
  type Stack,
  spawnStackWorker,
  startStack,
  withRealWorker,
} from '../support/endpoint-integration';
import { eventually } from '../support/integration';
import { uniqueTaskQueue } from '../support/temporal';

describe('endpoint teardown (dev server, emulator over HTTP, real activities)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  const control = () => stack.emulator.control;
  const exists = (endpointId: string) =>
    control()
      .endpoints(API_KEY)
      .some((endpoint) => endpoint.id === endpointId);

  /** An endpoint with one worker kept warm, as a pipeline would have it while running. */
  function busyEndpoint(extra: { networkVolumeId?: string } = {}) {
    return control().createEndpoint(API_KEY, {
      name: `teardown-${uniqueTaskQueue('e')}`,
      templateId: 'scripted',
      gpuIds: 'AMPERE_16',
      workersMin: 1,
      workersMax: 1,
      ...extra,
    });
  }

  async function submit(endpointId: string, input: Record<string, unknown>) {
    // A week of service time: hanging jobs end only as the test decides, however slow the machine.
    return (
      await stack.client.jobs.run(endpointId, {
        input,
        policy: { executionTimeout: 604_800_000, ttl: 604_800_000 },
      })
    ).id;
  }

  const status = (jobId: string) => control().job(jobId)?.status;

  /** Activity failures in the history: a refused deleteEndpoint would be one. */
  async function failedActivities(handle: WorkflowHandle) {
    const history = await handle.fetchHistory();
    return (history.events ?? []).filter((event) => event.activityTaskFailedEventAttributes).length;
  }

  it('cancel: the running job is cancelled, the queued one purged, and deletion is never refused', async () => {
    const endpoint = busyEndpoint();
    const running = await submit(endpoint.id, { hang: true });
    await eventually(() => status(running) === 'IN_PROGRESS');
    const queued = await submit(endpoint.id, { sleepMs: 1_000 });

    // The rule teardown has to respect: a direct delete is refused while workers are allowed.
    const refused = await stack.client.endpoints.delete(endpoint.id).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ServiceError);
    expect((refused as ServiceError).message).toContain('set both to 0');

    const { result, phases, failures } = await withRealWorker(stack, async (taskQueue) => {
      const handle = await startTeardownEndpoint(
        stack.env.client,
        { endpointId: endpoint.id, jobs: { mode: 'cancel', jobIds: [running] }, pollInterval: 200 },
        { taskQueue },
      );
      const result = await handle.result();
      const phases = (await handle.query(endpointLifecycleQuery)).phases.map((entry) => entry.phase);
      return { result, phases, failures: await failedActivities(handle) };
    });
    expect(phases).toEqual([
      'starting',
      'resolving',
      'scaling-to-zero',
      'purging-queue',
      'cancelling-jobs',
      'draining-workers',
      'deleting-endpoint',
      'done',
    ]);
    expect(failures).toBe(0);
    expect(result).toMatchObject({
      endpointIds: [endpoint.id],
      alreadyGone: false,
      purged: 1,
      cancelled: [{ jobId: running, status: 'CANCELLED' }],
      drained: true,
    });
    expect(status(running)).toBe('CANCELLED');
    expect(status(queued)).toBe('CANCELLED');
    expect(exists(endpoint.id)).toBe(false);
  });

  it('wait: the running job finishes within the bound, then the endpoint goes', async () => {
    const endpoint = busyEndpoint();
    // 40 s of service time: 2 s at the emulator's time scale.
    const running = await submit(endpoint.id, { sleepMs: 40_000, output: 'finished' });
    await eventually(() => status(running) === 'IN_PROGRESS');
    const result = await withRealWorker(stack, (taskQueue) =>
      teardownEndpoint(
        stack.env.client,
        {
          endpointId: endpoint.id,
          jobs: { mode: 'wait', timeout: '1 minute', jobIds: [running] },
          pollInterval: 200,
        },
        { taskQueue },
      ),
    );
    expect(result).toMatchObject({ jobsFinished: true, cancelled: [], drained: true });
    expect(status(running)).toBe('COMPLETED');
    expect(control().job(running)?.removedReason).toBe('endpoint-deleted');
    expect(exists(endpoint.id)).toBe(false);
  });

  it('purge: queued jobs are removed, the running one may finish while workers drain', async () => {
    const endpoint = busyEndpoint();
    const running = await submit(endpoint.id, { sleepMs: 40_000 });
    await eventually(() => status(running) === 'IN_PROGRESS');
    // The service's clock stands still until the queue is purged: the running job cannot finish
    // (and its worker take a queued job) before, however slow the machine.
    control().freeze();
    const queued = [await submit(endpoint.id, { sleepMs: 1 }), await submit(endpoint.id, { sleepMs: 1 })];
    const result = await withRealWorker(stack, async (taskQueue) => {
      const handle = await startTeardownEndpoint(
        stack.env.client,
        { endpointId: endpoint.id, pollInterval: 200 },
        { taskQueue },
      );
      try {
        await eventually(async () => {
          const phases = (await handle.query(endpointLifecycleQuery).catch(() => undefined))?.phases ?? [];
          return phases.some((entry) => entry.phase === 'draining-workers');
        });
      } finally {
        // Purged (or failed: the next tests need a running clock); the running job finishes while
        // the workers drain.
        control().resume();
      }
      return handle.result();
    });
    expect(result).toMatchObject({ purged: 2, drained: true, cancelled: [] });
    expect(queued.map(status)).toEqual(['CANCELLED', 'CANCELLED']);
    expect(status(running)).toBe('COMPLETED');
    expect(exists(endpoint.id)).toBe(false);
  });

  it('an endpoint that is already gone is a successful teardown', async () => {
    const endpoint = control().createEndpoint(API_KEY, {
      name: 'short-lived',
      templateId: 'scripted',
      workersMax: 0,
    });
    await stack.client.endpoints.delete(endpoint.id);
    const result = await withRealWorker(stack, (taskQueue) =>
      teardownEndpoint(stack.env.client, { endpointId: endpoint.id }, { taskQueue }),
    );
    expect(result).toMatchObject({ alreadyGone: true, endpointIds: [] });
  });

  it('a worker killed mid-teardown and started again: the endpoint ends deleted, its volume too', async () => {
    const volume = control().createNetworkVolume(API_KEY);
    const endpoint = busyEndpoint({ networkVolumeId: volume.id });
    const running = await submit(endpoint.id, { hang: true });
    await eventually(() => status(running) === 'IN_PROGRESS');

    // The real worker entry point in a child process, so the kill is a real crash (SIGKILL).
    const taskQueue = uniqueTaskQueue('teardown-crash');
    const first = spawnStackWorker(stack, taskQueue);
    const workers = [first];
    try {
      await first.running;
      const handle = await startTeardownEndpoint(
        stack.env.client,
        {
          endpointId: endpoint.id,
          jobs: { mode: 'wait', timeout: '15 seconds', jobIds: [running] },
          pollInterval: 500,
          deleteNetworkVolume: true,
        },
        { taskQueue },
      );
      await eventually(
        async () => (await handle.query(endpointLifecycleQuery)).phase === 'waiting-for-jobs',
        60_000,
      );
      await first.kill();
      // Killed half-way: scaled to zero, not yet deleted.
      expect(
        control()
          .endpoints(API_KEY)
          .find((e) => e.id === endpoint.id),
      ).toMatchObject({
        workersMin: 0,
        workersMax: 0,
      });

      const second = spawnStackWorker(stack, taskQueue);
      workers.push(second);
      await second.running;
      const result = await handle.result();
      expect(result).toMatchObject({
        endpointIds: [endpoint.id],
        jobsFinished: false,
        cancelled: [{ jobId: running, status: 'CANCELLED' }],
        networkVolumesDeleted: [volume.id],
      });
      expect(exists(endpoint.id)).toBe(false);
      expect(status(running)).toBe('CANCELLED');
      // Two worker processes ran this workflow's tasks: the first, then the one started after the crash.
      const history = await handle.fetchHistory();
      const identities = new Set(
        (history.events ?? [])
          .map((event) => event.workflowTaskStartedEventAttributes?.identity)
          .filter(Boolean),
      );
      expect(identities.size).toBe(2);
      // Deleting the volume again is refused as an unknown id: it is gone.
      const again = await stack.client.rest.deleteNetworkVolume(volume.id).catch((error: unknown) => error);
      expect(again).toMatchObject({ kind: 'BadRequest', status: 400 });
      expect((again as ServiceError).message).toContain('invalid network volume id');
    } finally {
      for (const worker of workers) await worker.kill();
    }
  }, 300_000);
});
