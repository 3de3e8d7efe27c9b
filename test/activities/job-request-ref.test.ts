/**
 * The job activities with a request by reference: the ttl and the request are read from a local
 * batch store (the batch activities' store), checked like a batch's items, and sent with the
 * workflow's webhook; a reference to nothing is a BadRequest naming requestRef.
 */
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { beforeEach, describe, expect, it } from 'vitest';
import { createJobActivities } from '../../activities/job';
import { createLocalBatchStore } from '../../stores/batch-store';
import { tempDir } from '../support/temp-dir';
import { activityEnv, type StubClient, stubClient } from './job-stub';

describe('job activities: a request by reference', () => {
  let stub: StubClient;
  let dir: string;
  beforeEach(async () => {
    stub = stubClient();
    dir = tempDir('job-request-ref');
    await createLocalBatchStore(path.join(dir, 'batches')).writeLines('b-1/items.jsonl', [
      JSON.stringify({ input: { n: 0 } }),
      JSON.stringify({ input: { n: 1 }, policy: { ttl: 45_000 } }),
      '{"input": 3',
    ]);
  });

  // The default store: `batches` under the result store's directory, as the batch activities use it.
  const activities = () =>
    createJobActivities({
      client: stub.client,
      resultStoreDir: dir,
      webhookUrlFor: (workflowId) => `https://hooks.test/webhooks/${workflowId}?token=t`,
    });

  it("reads the request's ttl, and sends the referenced request with the webhook", async () => {
    const env = activityEnv();
    expect(
      await env.call(activities().requestTtl, { requestRef: { manifestKey: 'b-1/items.jsonl', index: 1 } }),
    ).toEqual({ ttl: 45_000 });
    expect(
      await env.call(activities().requestTtl, { requestRef: { manifestKey: 'b-1/items.jsonl', index: 0 } }),
    ).toEqual({});
    stub.answer('run', { id: 'job-1', status: 'IN_QUEUE' });
    const result = await env.call(activities().submitJob, {
      endpointId: 'ep-1',
      requestRef: { manifestKey: 'b-1/items.jsonl', index: 1 },
    });
    expect(result).toMatchObject({ jobId: 'job-1', webhookArmed: true });
    expect(stub.named('run')[0]).toEqual([
      'ep-1',
      { input: { n: 1 }, policy: { ttl: 45_000 }, webhook: 'https://hooks.test/webhooks/wf-1?token=t' },
    ]);
  });

  it('refuses a reference to nothing, or to a broken line, naming it, before anything is sent', async () => {
    const env = activityEnv();
    const missing = await env
      .call(activities().submitJob, {
        endpointId: 'ep-1',
        requestRef: { manifestKey: 'b-1/items.jsonl', index: 9 },
      })
      .catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(ApplicationFailure);
    expect(missing).toMatchObject({
      type: 'BadRequest',
      nonRetryable: true,
      details: [{ field: 'requestRef' }],
    });
    const broken = await env
      .call(activities().requestTtl, { requestRef: { manifestKey: 'b-1/items.jsonl', index: 2 } })
      .catch((error: unknown) => error);
    expect(broken).toMatchObject({ type: 'BadRequest', message: expect.stringContaining('items line 3') });
    expect(stub.named('run')).toHaveLength(0);
  });
});
