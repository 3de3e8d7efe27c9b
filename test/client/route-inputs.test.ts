/**
 * A route wherever an endpoint id is taken: startJob/runJob, startBatch, the schedules of jobs and
 * batches, and an automation's planned run. A bad route is refused before anything is sent (a
 * ValidationError naming the field and the rule; the recording client sees no call), a good one
 * reaches the workflow as written, named in the run's summary, with the route's first endpoint (in
 * price order) as the batch's search attribute.
 */
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createAutomationActivities } from '../../activities/automation';
import { ValidationError } from '../../api/errors';
import { startBatch, validateBatchInput } from '../../client/batches';
import { runJob, startJob, validateJobInput } from '../../client/jobs';
import { scheduleBatch, scheduleJob } from '../../client/schedules';
import { describeBatch, describeJob } from '../../client/workflow-descriptions';
import type { BatchInput } from '../../contracts/batch-input';
import type { JobWorkflowInput } from '../../contracts/job-input';
import { endpointIdKey } from '../../workflows/shared/search-attributes';

/** A client that records workflow starts and schedule creations and answers nothing else. */
function recordingClient() {
  const calls: { method: string; options: Record<string, unknown> }[] = [];
  const client = {
    workflow: {
      start: async (_type: string, options: Record<string, unknown>) => {
        calls.push({ method: 'workflow.start', options });
        return { workflowId: options.workflowId };
      },
    },
    schedule: {
      create: async (options: Record<string, unknown>) => {
        calls.push({ method: 'schedule.create', options });
        return {};
      },
    },
  } as unknown as Client;
  return { client, calls };
}

function refusal(check: () => unknown): { field: string; rule: string } | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    const { field, rule } = error as ValidationError;
    return { field, rule };
  }
}

async function refusedAsync(promise: Promise<unknown>): Promise<ValidationError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

const request = { input: { prompt: 'hi' } };
const route = { endpoints: [{ endpointId: 'ep-a' }, { endpointId: 'ep-b' }] };
const job: JobWorkflowInput = { route, request };
const batch: BatchInput = { route, items: { inline: [{ input: { n: 1 } }, { input: { n: 2 } }] } };

/** Each bad route, the field it is refused on and the rule (the same for a job and a batch). */
const badRoutes: [string, unknown, string, RegExp][] = [
  ['no endpoint', { endpoints: [] }, 'route.endpoints', /must name at least one endpoint/],
  [
    'nine endpoints',
    { endpoints: Array.from({ length: 9 }, (_, k) => ({ endpointId: `ep-${k}` })) },
    'route.endpoints',
    /at most 8 endpoints/,
  ],
  [
    'an endpoint twice',
    { endpoints: [{ endpointId: 'ep-a' }, { endpointId: 'ep-a' }] },
    'route.endpoints',
    /must not name an endpoint twice/,
  ],
  ['a bad endpoint id', { endpoints: [{ endpointId: 'a/b' }] }, 'route.endpoints.0.endpointId', /./],
  [
    'a weight of 0',
    { endpoints: [{ endpointId: 'ep-a', weight: 0 }] },
    'route.endpoints.0.weight',
    /must be a number > 0/,
  ],
  [
    'a negative price',
    { endpoints: [{ endpointId: 'ep-a', pricePerSecond: -1 }] },
    'route.endpoints.0.pricePerSecond',
    /price >= 0/,
  ],
  [
    'a share above 1',
    { endpoints: [{ endpointId: 'ep-a', maxShare: 1.5 }] },
    'route.endpoints.0.maxShare',
    /./,
  ],
  [
    'a queue delay limit under 5 s',
    { ...route, queueDelayLimit: '1s' },
    'route.queueDelayLimit',
    /between 5000 and 86400000 ms/,
  ],
  ['a bad recheckAfter', { ...route, recheckAfter: 'soon' }, 'route.recheckAfter', /duration/],
  ['an empty capacity failure', { ...route, capacityFailures: [''] }, 'route.capacityFailures.0', /./],
  ['an unknown field', { ...route, fallback: true }, 'route', /unknown field\(s\) fallback/],
];

describe('a route in a job input', () => {
  it('is accepted in place of endpointId', () => {
    expect(refusal(() => validateJobInput(job))).toBeUndefined();
  });

  it.each(badRoutes)('refuses %s, naming the field', (_name, bad, field, rule) => {
    const refused = refusal(() => validateJobInput({ request, route: bad } as JobWorkflowInput));
    expect(refused?.field).toBe(field);
    expect(refused?.rule).toMatch(rule);
  });

  it('refuses both endpointId and route, or neither', () => {
    expect(refusal(() => validateJobInput({ ...job, endpointId: 'ep-a' }))).toEqual({
      field: 'endpointId',
      rule: 'exactly one of endpointId and route is required',
    });
    expect(refusal(() => validateJobInput({ request }))).toMatchObject({ field: 'endpointId' });
  });

  it('refuses a route in mode runsync', () => {
    expect(refusal(() => validateJobInput({ ...job, mode: 'runsync' }))).toEqual({
      field: 'route',
      rule: 'a route needs mode async or sync (a /runsync job cannot be withdrawn from the queue)',
    });
  });

  it('startJob and runJob refuse a bad route before starting anything', async () => {
    const { client, calls } = recordingClient();
    const bad = { request, route: { endpoints: [] } } as JobWorkflowInput;
    const started = await refusedAsync(startJob(client, bad, { workflowId: 'j1' }));
    expect(started.message).toBe('route.endpoints: must name at least one endpoint');
    const ran = await refusedAsync(runJob(client, bad, { workflowId: 'j1' }));
    expect(ran.field).toBe('route.endpoints');
    expect(calls).toEqual([]);
  });

  it('startJob hands the route on as written and names it in the summary', async () => {
    const { client, calls } = recordingClient();
    const priced: JobWorkflowInput = {
      request,
      route: {
        endpoints: [
          { endpointId: 'ep-dear', pricePerSecond: 0.002 },
          { endpointId: 'ep-cheap', pricePerSecond: 0.001 },
        ],
        queueDelayLimit: '2m',
      },
    };
    await startJob(client, priced, { workflowId: 'j1' });
    expect(calls).toHaveLength(1);
    const options = calls[0]!.options;
    expect(options.args).toEqual([priced]);
    // Cheapest first: the order work goes to the endpoints.
    expect(options.staticSummary).toBe('Job on route ep-cheap → ep-dear (async, input 15 B)');
  });
});

describe('a route in a batch input', () => {
  it('is accepted in place of endpointId', () => {
    expect(refusal(() => validateBatchInput(batch))).toBeUndefined();
  });

  it.each(badRoutes)('refuses %s, naming the field', (_name, bad, field, rule) => {
    const refused = refusal(() => validateBatchInput({ ...batch, route: bad } as BatchInput));
    expect(refused?.field).toBe(field);
    expect(refused?.rule).toMatch(rule);
  });

  it("refuses both endpointId and route, and takes a route in mode 'children' too", () => {
    expect(refusal(() => validateBatchInput({ ...batch, endpointId: 'ep-a' }))).toEqual({
      field: 'endpointId',
      rule: 'exactly one of endpointId and route is required',
    });
    expect(refusal(() => validateBatchInput({ ...batch, mode: 'children' }))).toBeUndefined();
  });

  it('startBatch refuses a bad route before starting anything', async () => {
    const { client, calls } = recordingClient();
    const bad = { ...batch, route: { endpoints: [] } } as BatchInput;
    const refused = await refusedAsync(startBatch(client, bad, { workflowId: 'b1' }));
    expect(refused.message).toBe('route.endpoints: must name at least one endpoint');
    expect(calls).toEqual([]);
  });

  it("startBatch files the batch under the route's first endpoint in price order", async () => {
    const { client, calls } = recordingClient();
    const priced: BatchInput = {
      ...batch,
      route: {
        endpoints: [
          { endpointId: 'ep-dear', pricePerSecond: 0.002 },
          { endpointId: 'ep-cheap', pricePerSecond: 0.001 },
        ],
      },
    };
    await startBatch(client, priced, { workflowId: 'b1' });
    const options = calls[0]!.options;
    expect(options.args).toEqual([priced]);
    expect(options.typedSearchAttributes).toEqual([{ key: endpointIdKey, value: 'ep-cheap' }]);
    expect(options.staticSummary).toBe('Batch of 2 items on route ep-cheap → ep-dear, 100 at once');
  });
});

describe('a route in a schedule', () => {
  const schedule = { scheduleId: 'nightly', spec: { cron: ['0 2 * * *'] } };

  it('refuses a bad route of a job or a batch schedule under input, sending nothing', async () => {
    const { client, calls } = recordingClient();
    const badJob = { request, route: { endpoints: [] } } as JobWorkflowInput;
    expect((await refusedAsync(scheduleJob(client, badJob, schedule))).message).toBe(
      'input.route.endpoints: must name at least one endpoint',
    );
    const badBatch = { ...batch, route: { ...route, queueDelayLimit: 10 } } as BatchInput;
    expect((await refusedAsync(scheduleBatch(client, badBatch, schedule))).field).toBe(
      'input.route.queueDelayLimit',
    );
    expect(calls).toEqual([]);
  });

  it("runs a job or a batch on the route, a batch filed under the route's first endpoint", async () => {
    const { client, calls } = recordingClient();
    await scheduleJob(client, job, schedule);
    await scheduleBatch(client, batch, { ...schedule, scheduleId: 'nightly-batch' });
    const [jobAction, batchAction] = calls.map((call) => call.options.action as Record<string, unknown>);
    expect(jobAction?.args).toEqual([job]);
    expect(jobAction?.staticSummary).toBe('Job on route ep-a → ep-b (async, input 15 B)');
    expect(batchAction?.args).toEqual([batch]);
    expect(batchAction?.typedSearchAttributes).toEqual([{ key: endpointIdKey, value: 'ep-a' }]);
  });
});

describe("a route in an automation's run", () => {
  const plan = (run: unknown) =>
    createAutomationActivities({
      automations: [{ name: 'nightly', run: () => run as never }],
    }).planAutomationRun({ name: 'nightly', key: 'k', runId: 'r1', events: [] });

  it('plans a job on a route as written', async () => {
    expect(await plan({ kind: 'job', input: job })).toEqual({ kind: 'job', input: job });
  });

  it('refuses a bad route, naming the field under input', async () => {
    const error = await plan({ kind: 'job', input: { request, route: { endpoints: [] } } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect((error as ApplicationFailure).message).toBe(
      'automation nightly planned an invalid run: input.route.endpoints: must name at least one endpoint',
    );
  });
});

describe('descriptions of a run on a route', () => {
  it("a job's details name the route, its queue delay limit and capacity failures", () => {
    const { staticDetails } = describeJob({
      ...job,
      route: { ...route, queueDelayLimit: '2m', capacityFailures: ['out of memory'] },
    });
    expect(staticDetails).toContain('| Route | `ep-a` → `ep-b` |');
    expect(staticDetails).toContain('| Queue delay limit | 2 min (then withdrawn to the next endpoint) |');
    expect(staticDetails).toContain('| Capacity failures | `out of memory` |');
    expect(staticDetails).not.toContain('| Endpoint |');
  });

  it("a batch's details name each endpoint's window and the recheck delay", () => {
    const { staticDetails } = describeBatch({
      ...batch,
      maxConcurrency: 40,
      route: { endpoints: [{ endpointId: 'ep-a', weight: 3 }, { endpointId: 'ep-b' }] },
    });
    expect(staticDetails).toContain(
      "| Endpoint windows | `ep-a` 30, `ep-b` 10, at most each endpoint's workers and a quarter more |",
    );
    expect(staticDetails).toContain('| Recheck a drained endpoint after | 1 min |');
    expect(staticDetails).toContain(
      '| Capacity failures | none (a failure is retried on the same endpoint) |',
    );
  });

  it("a batch in mode 'children' names the route but no windows: each item's job follows it alone", () => {
    const { staticSummary, staticDetails } = describeBatch({ ...batch, mode: 'children' });
    expect(staticSummary).toBe('Batch of 2 items on route ep-a → ep-b, 100 at once');
    expect(staticDetails).toContain('| Route | `ep-a` → `ep-b` |');
    expect(staticDetails).not.toContain('Endpoint windows');
    expect(staticDetails).not.toContain('Recheck');
  });
});
