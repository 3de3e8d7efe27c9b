/**
 * The submit activity of a job on a route, against a stub API client: the endpoint's input
 * overrides are set over the request's input (given or read by its ref), and a submit that moves
 * the job to another endpoint is counted as a hop once the service accepts it.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { createJobActivities } from '../../activities/job';
import { type LibraryMetrics, noopMetrics, type RouteHopReason } from '../../api/metrics';
import { tempDir } from '../support/temp-dir';
import { activityEnv, type StubClient, serviceError, stubClient } from './job-stub';

describe('the submit activity on a route', () => {
  let stub: StubClient;
  let hops: RouteHopReason[];
  const metrics: LibraryMetrics = { ...noopMetrics, routeHop: (reason) => hops.push(reason) };
  beforeEach(() => {
    stub = stubClient();
    hops = [];
  });
  const activities = () =>
    createJobActivities({
      client: stub.client,
      resultStoreDir: tempDir('job-route-submit'),
      metrics,
    });

  it("sets the endpoint's input overrides over the request's input and counts the hop", async () => {
    stub.answer('run', { id: 'job-b', status: 'IN_QUEUE' });
    await activityEnv().call(activities().submitJob, {
      endpointId: 'b',
      request: { input: { prompt: 'x', precision: 'fp32' }, policy: { ttl: 60_000 } },
      inputOverrides: { precision: 'fp16' },
      hop: 'starved',
    });
    expect(stub.named('run')[0]).toEqual([
      'b',
      { input: { prompt: 'x', precision: 'fp16' }, policy: { ttl: 60_000 } },
    ]);
    expect(hops).toEqual(['starved']);
  });

  it('counts no hop for a submit the service refused, nor for a submit without one', async () => {
    stub.answer('run', serviceError({ kind: 'BadRequest', operation: 'run', status: 400 }));
    await expect(
      activityEnv().call(activities().submitJob, {
        endpointId: 'b',
        request: { input: {} },
        hop: 'capacity-failure',
      }),
    ).rejects.toThrow();
    stub.answer('run', { id: 'job-a', status: 'IN_QUEUE' });
    await activityEnv().call(activities().submitJob, { endpointId: 'a', request: { input: {} } });
    expect(hops).toEqual([]);
  });
});
