/**
 * Teardown: scale to zero, handle the jobs as the caller chose, watch /health until no worker runs
 * (bounded), delete the endpoint, then its network volume if asked. Deterministic workflow code only.
 */
import { ApplicationFailure, sleep } from '@temporalio/workflow';
import type { Endpoint } from '../../api/schemas/endpoint';
import type { HealthResponse } from '../../api/schemas/job';
import {
  cancelEndpointJobSummary,
  deleteEndpointSummary,
  deleteNetworkVolumeSummary,
  endpointHealthSummary,
  findEndpointsSummary,
  healthPollSummary,
  purgeQueueSummary,
  readEndpointSummary,
  scaleToZeroSummary,
} from '../../contracts/activity-summaries';
import type { EndpointChanges, TeardownOptions } from '../../contracts/endpoint-input';
import type { TeardownResult } from '../../contracts/endpoint-results';
import { ENDPOINT_FAILURE } from '../../contracts/failures';
import { failureType, type Tracker, teardownAct, updateInput } from './endpoint-common';

export type TeardownTarget =
  | { endpointId: string }
  /** allOfName: every endpoint of the name is this workflow's own (an ephemeral workflow's name). */
  | { name: string; allOfName: boolean }
  | { nothing: true };

const GONE = new Set<string>([ENDPOINT_FAILURE.notFound, 'NotFound']);
const MAX_POLL_INTERVAL_MS = 30_000;
const DELETE_ROUNDS = 3;

/** Runs a step on an endpoint that may vanish meanwhile; undefined when it did. */
async function unlessGone<T>(step: () => Promise<T>): Promise<T | undefined> {
  try {
    return await step();
  } catch (error) {
    if (GONE.has(failureType(error) ?? '')) return undefined;
    throw error;
  }
}

/**
 * Polls /health until `done` holds or `timeoutMs` of workflow time passed; true when it held.
 * `waitingFor` says what for in the activities' and timers' summaries ("workers to stop").
 */
async function watchHealth(
  endpointId: string,
  done: (health: HealthResponse) => boolean,
  timeoutMs: number,
  intervalMs: number,
  waitingFor: string,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let interval = intervalMs;
  for (;;) {
    const health = await unlessGone(() =>
      teardownAct.endpointHealth.executeWithOptions(
        { summary: endpointHealthSummary(endpointId, waitingFor) },
        [endpointId],
      ),
    );
    if (!health || done(health)) return true;
    const left = deadline - Date.now();
    if (left <= 0) return false;
    const delay = Math.min(interval, left);
    await sleep(delay, { summary: healthPollSummary(endpointId, delay, waitingFor) });
    interval = Math.min(interval * 2, Math.max(MAX_POLL_INTERVAL_MS, intervalMs));
  }
}

async function purge(endpointId: string, track: Tracker, result: TeardownResult): Promise<void> {
  track.enter('purging-queue');
  const purged = await unlessGone(() =>
    teardownAct.purgeEndpointQueue.executeWithOptions({ summary: purgeQueueSummary(endpointId) }, [
      endpointId,
    ]),
  );
  result.purged += purged?.removed ?? 0;
}

async function cancelJobs(endpointId: string, jobIds: string[], track: Tracker, result: TeardownResult) {
  if (jobIds.length === 0) return;
  track.enter('cancelling-jobs');
  const answers = await Promise.all(
    jobIds.map((jobId) =>
      unlessGone(() =>
        teardownAct.cancelEndpointJob.executeWithOptions(
          { summary: cancelEndpointJobSummary(endpointId, jobId) },
          [endpointId, jobId],
        ),
      ),
    ),
  );
  answers.forEach((answer, index) => {
    result.cancelled.push(answer ?? { jobId: jobIds[index]! });
  });
}

/** The caller's choice for the jobs, once no new worker can start. */
async function handleJobs(
  endpointId: string,
  options: TeardownOptions,
  track: Tracker,
  result: TeardownResult,
) {
  const jobs = options.jobs;
  switch (jobs.mode) {
    case 'purge':
      await purge(endpointId, track, result);
      return;
    case 'cancel':
      // Queued first, so no cancelled job's worker picks up another on its way out.
      await purge(endpointId, track, result);
      await cancelJobs(endpointId, jobs.jobIds, track, result);
      return;
    case 'wait':
      track.enter('waiting-for-jobs');
      result.jobsFinished = await watchHealth(
        endpointId,
        (health) => health.jobs.inProgress === 0,
        jobs.timeout,
        options.pollInterval,
        'its jobs to finish',
      );
      if (!result.jobsFinished) await cancelJobs(endpointId, jobs.jobIds, track, result);
      // With workersMax at 0 queued jobs can never start: remove them rather than leave them hanging.
      await purge(endpointId, track, result);
      return;
  }
}

/**
 * Scale to zero, handle the jobs, drain, delete: the order that keeps deleteEndpoint from being
 * refused. Should someone raise the workers in between, the refusal sends it round again.
 */
async function removeEndpoint(
  endpoint: Endpoint,
  options: TeardownOptions,
  track: Tracker,
  result: TeardownResult,
) {
  for (let round = 1; ; round++) {
    track.enter('scaling-to-zero');
    const scaled = await unlessGone(() =>
      teardownAct.updateEndpoint.executeWithOptions({ summary: scaleToZeroSummary(endpoint.id) }, [
        updateInput(endpoint, { workersMin: 0, workersMax: 0 } as EndpointChanges),
      ]),
    );
    if (!scaled) return;
    if (round === 1) {
      await handleJobs(endpoint.id, options, track, result);
      track.enter('draining-workers');
      result.drained = await watchHealth(
        endpoint.id,
        (health) => health.workers.running === 0,
        options.drainTimeout,
        options.pollInterval,
        'its workers to stop',
      );
    }
    track.enter('deleting-endpoint');
    try {
      await teardownAct.deleteEndpoint.executeWithOptions({ summary: deleteEndpointSummary(endpoint.id) }, [
        endpoint.id,
      ]);
      return;
    } catch (error) {
      if (failureType(error) !== ENDPOINT_FAILURE.notScaledDown || round >= DELETE_ROUNDS) throw error;
    }
  }
}

/**
 * Scales to zero, handles jobs as asked, waits (bounded) for workers to stop, deletes the
 * endpoint, then the network volume if asked. An endpoint that is already gone is success.
 */
export async function teardown(
  target: TeardownTarget,
  options: TeardownOptions,
  track: Tracker,
  networkVolumeId?: string,
): Promise<TeardownResult> {
  track.enter('resolving');
  let endpoints: Endpoint[] = [];
  if ('endpointId' in target) {
    track.endpoint(target.endpointId);
    const endpoint = await teardownAct.readEndpoint.executeWithOptions(
      { summary: readEndpointSummary(target.endpointId) },
      [target.endpointId],
    );
    if (endpoint) endpoints = [endpoint];
  } else if ('name' in target) {
    track.endpoint(undefined, target.name);
    endpoints = await teardownAct.findEndpointsByName.executeWithOptions(
      { summary: findEndpointsSummary(target.name) },
      [target.name],
    );
    if (endpoints.length > 1 && !target.allOfName) {
      throw ApplicationFailure.create({
        type: ENDPOINT_FAILURE.duplicateName,
        message: `${endpoints.length} endpoints are named ${JSON.stringify(target.name)}; tear one down by id`,
        nonRetryable: true,
      });
    }
  }

  const result: TeardownResult = {
    endpointIds: [],
    alreadyGone: endpoints.length === 0,
    purged: 0,
    cancelled: [],
    jobsFinished: true,
    drained: true,
    networkVolumesDeleted: [],
  };
  const volumes = new Set<string>(networkVolumeId ? [networkVolumeId] : []);
  for (const endpoint of endpoints) {
    track.endpoint(endpoint.id, endpoint.name);
    if (endpoint.networkVolumeId) volumes.add(endpoint.networkVolumeId);
    await removeEndpoint(endpoint, options, track, result);
    result.endpointIds.push(endpoint.id);
  }
  if (options.deleteNetworkVolume) {
    for (const volume of volumes) {
      track.enter('deleting-network-volume');
      await teardownAct.deleteNetworkVolume.executeWithOptions(
        { summary: deleteNetworkVolumeSummary(volume) },
        [volume],
      );
      result.networkVolumesDeleted.push(volume);
    }
  }
  return result;
}
