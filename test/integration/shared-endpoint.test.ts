/**
 * Many workloads on one endpoint share its limits and all finish: three batches and single jobs
 * started together, on one worker, with the worker's /run limit at 20 requests per 10 s so that
 * the three batches together offer three times what a window holds. Each batch alone would book
 * the whole window for itself; the endpoint's gate (workflows/endpoint/endpoint-gate.ts) holds one window for
 * all of them, so every item is submitted once and every workload ends.
 *
 * The emulator runs at time scale 1: the limits are counted in real seconds on both sides.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitBatch, startBatch } from '../../client/batches';
import { awaitJob } from '../../client/jobs';
import { type JobStack, startJobStack } from '../support/integration';

const RUN_LIMIT = 20;
const BATCHES = 3;
const ITEMS = 20;
const JOBS = 3;

describe('many workloads on one endpoint', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({
      name: 'shared-endpoint',
      timeScale: 1,
      webhooks: true,
      env: { SERVERLESS_RATE_LIMITS: JSON.stringify({ run: { perTenSeconds: RUN_LIMIT } }) },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('three batches and single jobs started together all finish, each item submitted once', async () => {
    const endpointId = stack.endpoint({ workersMin: 10, workersMax: 10 });
    const batches = await Promise.all(
      Array.from({ length: BATCHES }, (_, batch) =>
        startBatch(
          stack.client,
          {
            endpointId,
            items: {
              inline: Array.from({ length: ITEMS }, (_, i) => ({
                input: { sleepMs: 50, output: { batch, i } },
              })),
            },
            maxConcurrency: ITEMS,
          },
          { workflowId: `shared-endpoint-${batch}-${Date.now()}`, taskQueue: stack.taskQueue },
        ),
      ),
    );
    const jobs = await Promise.all(
      Array.from({ length: JOBS }, (_, job) =>
        stack.start(
          { endpointId, request: { input: { sleepMs: 50, output: { job } } } },
          { label: 'single' },
        ),
      ),
    );

    const summaries = await Promise.all(batches.map((batch) => awaitBatch(stack.client, { batch })));
    for (const summary of summaries) {
      expect(summary).toMatchObject({ total: ITEMS, counts: { completed: ITEMS }, submissions: ITEMS });
    }
    const outputs = await Promise.all(jobs.map((job) => awaitJob(stack.client, { job })));
    expect(outputs.map((output) => output.output)).toEqual(
      Array.from({ length: JOBS }, (_, job) => ({ job })),
    );
    expect(stack.control.submissions(endpointId)).toBe(BATCHES * ITEMS + JOBS);
  }, 240_000);
});
