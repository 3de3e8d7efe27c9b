/**
 * Workflows that own an endpoint's life: provision (idempotent by name), update (merge over the
 * current endpoint), teardown (scale to zero, handle jobs, drain, delete, volume) and an ephemeral
 * endpoint that lives exactly as long as the caller's batch or job workflows. Every one answers
 * endpointLifecycleQuery with its phase.
 */
import {
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowCancellationType,
  executeChild,
  log,
  ParentClosePolicy,
  workflowInfo,
} from '@temporalio/workflow';
import type { Endpoint } from '../../api/schemas/endpoint';
import type { BatchSummary } from '../../contracts/batch-summary';
import {
  type EphemeralEndpointInput,
  type EphemeralEndpointRequest,
  type EphemeralJob,
  endpointNameFor,
  ephemeralEndpointInputSchema,
  jobsAsBatch,
  type ProvisionEndpointInput,
  provisionEndpointInputSchema,
  type TeardownEndpointInput,
  teardownEndpointInputSchema,
  type UpdateEndpointInput,
  updateEndpointInputSchema,
} from '../../contracts/endpoint-input';
import type {
  EphemeralBatchFailure,
  EphemeralResult,
  ProvisionResult,
  TeardownResult,
} from '../../contracts/endpoint-results';
import { EPHEMERAL_FAILURE } from '../../contracts/failures';
import { workloadTaskPriority } from '../../contracts/task-priority';
import { parseInput, type Tracker, tracked, tracker } from './endpoint-common';
import { batchFailureSummary, runEphemeralBatch } from './endpoint-ephemeral';
import { type ProvisionProgress, provision, update } from './endpoint-provision';
import { type TeardownTarget, teardown } from './endpoint-teardown';

/**
 * Creates the endpoint, or adopts the one of the same name. The name is the caller's, or derived
 * from this workflow's id, so starting the same workflow id again finds what the first run made.
 */
export async function provisionEndpointWorkflow(input: ProvisionEndpointInput): Promise<ProvisionResult> {
  const track = tracker();
  return tracked(track, async () => {
    const request = parseInput(provisionEndpointInputSchema, input);
    return provision(request, request.name ?? endpointNameFor(workflowInfo().workflowId), track);
  });
}

/** Changes some fields of an endpoint; the rest are read from it and sent unchanged. */
export async function updateEndpointWorkflow(input: UpdateEndpointInput): Promise<Endpoint> {
  const track = tracker();
  return tracked(track, async () => {
    const request = parseInput(updateEndpointInputSchema, input);
    return update(request.endpointId, request.changes, track);
  });
}

/**
 * Scales to zero, handles jobs as the caller chose, waits (bounded) until no worker runs, deletes
 * the endpoint and, if asked, its network volume. Cancelling it does not stop it half-way: once
 * started, a teardown finishes (non-cancellable), so no endpoint is left scaled down but alive.
 */
export async function teardownEndpointWorkflow(input: TeardownEndpointInput): Promise<TeardownResult> {
  const track = tracker();
  return tracked(track, async () => {
    const request = parseInput(teardownEndpointInputSchema, input);
    const target: TeardownTarget =
      request.endpointId !== undefined
        ? { endpointId: request.endpointId }
        : { name: request.name!, allOfName: false };
    return CancellationScope.nonCancellable(() => teardown(target, request, track, request.networkVolumeId));
  });
}

/** What the ephemeral workflow passes to each job workflow: the caller's input plus the endpoint. */
export type EphemeralJobArgs = Record<string, unknown> & { endpointId: string };

/**
 * Runs the job workflows as children. Cancelling this workflow cancels them (each job workflow
 * cancels its remote job) and waits until they have ended, so teardown never races a job.
 */
async function runJobs(
  request: EphemeralEndpointRequest,
  jobs: EphemeralJob[],
  endpointId: string,
): Promise<unknown[]> {
  const parentId = workflowInfo().workflowId;
  const start = (job: EphemeralJob, index: number) =>
    executeChild<(args: EphemeralJobArgs) => Promise<unknown>>(request.jobWorkflowType, {
      workflowId: job.workflowId ?? `${parentId}/job-${index}`,
      args: [{ ...job.input, endpointId }],
      ...(request.jobTaskQueue !== undefined ? { taskQueue: request.jobTaskQueue } : {}),
      // Its priority, and the endpoint as its task fairness key (contracts/task-priority.ts).
      ...workloadTaskPriority({ ...job.input, endpointId }),
      cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
      // Terminated or timed out, this workflow still asks its jobs to cancel (and so their remote jobs).
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    });

  return CancellationScope.cancellable(async () => {
    const running = jobs.map(start);
    if (!request.failFast) {
      const settled = await Promise.allSettled(running);
      const failed = settled.find((outcome) => outcome.status === 'rejected');
      if (failed) throw failed.reason;
      return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value);
    }
    try {
      return await Promise.all(running);
    } catch (error) {
      CancellationScope.current().cancel();
      await Promise.allSettled(running);
      throw error;
    }
  });
}

/** What the endpoint ran: child job workflows' results, or a batch's summary. */
interface EphemeralWork {
  results: unknown[];
  batch?: BatchSummary;
}

/**
 * The batch form, and the `jobs` form whenever it maps onto a batch (jobsAsBatch), run as one batch
 * workflow; other `jobs` as child job workflows.
 */
async function runWork(
  request: EphemeralEndpointRequest,
  endpointId: string,
  track: Tracker,
): Promise<EphemeralWork> {
  track.enter('running-jobs');
  const batch = request.batch ?? jobsAsBatch(request);
  if (batch !== undefined) {
    return { results: [], batch: await runEphemeralBatch(batch, endpointId, request.jobTaskQueue) };
  }
  return { results: await runJobs(request, request.jobs ?? [], endpointId) };
}

/**
 * Provisions an endpoint, runs the caller's work on it (a batch, or job workflows as children), and
 * tears it down always: on success, on a failed batch or job and on cancellation, in a
 * non-cancellable scope. A batch that failed with its summary (past its failure tolerance or its
 * budget) fails this workflow with EphemeralBatchFailed carrying the summary and the teardown.
 */
export async function ephemeralEndpointWorkflow(input: EphemeralEndpointInput): Promise<EphemeralResult> {
  const track = tracker();
  return tracked(track, async () => {
    const request = parseInput(ephemeralEndpointInputSchema, input);
    const name = request.endpoint.name ?? endpointNameFor(workflowInfo().workflowId);
    const progress: ProvisionProgress = { createStarted: false };
    let provisioned: ProvisionResult | undefined;
    let work: EphemeralWork = { results: [] };
    let failure: unknown;
    try {
      // Not cancellable: a create cut short could still land after teardown looked for it.
      provisioned = await CancellationScope.nonCancellable(() =>
        provision(request.endpoint, name, track, progress),
      );
      work = await runWork(request, provisioned.endpointId, track);
    } catch (error) {
      failure = error;
    }

    // Teardown deletes only what this workflow made or adopted: by id when known; by name only if
    // a create may have run after the look-up found no endpoint of that name.
    const target: TeardownTarget =
      progress.endpointId !== undefined
        ? { endpointId: progress.endpointId }
        : progress.createStarted
          ? { name, allOfName: true }
          : { nothing: true };
    const failedBatch = batchFailureSummary(failure);
    let teardownResult: TeardownResult;
    try {
      teardownResult = await CancellationScope.nonCancellable(() =>
        teardown(target, request.teardown, track),
      );
    } catch (teardownError) {
      if (failure !== undefined)
        log.error('ephemeral endpoint: its work failed before teardown failed', {
          failure,
          // Where the batch's results are, so a failed teardown never hides them.
          ...(failedBatch ? { results: failedBatch.summary.results } : {}),
        });
      throw teardownError;
    }
    if (failedBatch !== undefined) {
      const details: EphemeralBatchFailure = {
        endpointId: provisioned!.endpointId,
        name: provisioned!.name,
        batch: failedBatch.summary,
        batchFailure: {
          type: failedBatch.failure.type ?? 'Error',
          message: failedBatch.failure.message,
        },
        teardown: teardownResult,
      };
      throw ApplicationFailure.create({
        type: EPHEMERAL_FAILURE.batchFailed,
        message: `${failedBatch.failure.message}; the endpoint was torn down`,
        nonRetryable: true,
        details: [details],
        cause: failure as Error,
      });
    }
    if (failure !== undefined) throw failure;
    return {
      endpointId: provisioned!.endpointId,
      name: provisioned!.name,
      results: work.results,
      ...(work.batch !== undefined ? { batch: work.batch } : {}),
      teardown: teardownResult,
    };
  });
}
