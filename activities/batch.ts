/**
 * The batch activities: a few activities do the work of many jobs, so a batch holds a handful of
 * worker slots however many items it has, and no item's request or output ever passes through
 * workflow history (the activities read the items from the batch store and write the results
 * there; the workflow sees indexes, job ids and statuses).
 *
 * - stageBatchItems: turns the items (inline, a manifest, the failures of an earlier batch) into a
 *   manifest in the store, checking every line first;
 * - submitBatchPage: POST /run for a page of items to one endpoint (with that endpoint's input
 *   overrides when the batch runs over a route), under the client's rate limiter. Never retried
 *   by Temporal, like the job workflow's submit: per item it answers the job id, a certain failure
 *   or "uncertain" (the request may have created a job whose id never came back). Under a submit
 *   lease (contracts/submit-lease.ts) each request goes out with ttl = the lease;
 * - extendBatchLeases: /status?ttl= sets each new job's ttl to the caller's, tried until its lease
 *   would end (a 404 says it is gone);
 * - watchBatchJobs: one look at /status for every job in flight; it writes COMPLETED results
 *   itself and returns the items that finished. When nothing changed it fails with a retryable
 *   JobUnchanged whose nextRetryDelay is the next polling interval: between looks the server
 *   holds the timer and no worker holds a slot (see job-wait.ts);
 * - retryBatchJobs, cancelBatchJobs: POST /retry and /cancel for a list of jobs;
 * - recordBatchResults: the lines of items that ended without output (failures);
 * - transformPipelinePieces, recordPipelineLines: a pipeline's transforms and result lines
 *   (pipeline.ts); stagePipelineRedrive, readPipelineRedriveList: a redrive's pieces, each at the
 *   stage it ended at (pipeline-redrive.ts); a pipeline's stages submit and watch with the
 *   activities above.
 *
 * Each lives in a module of its own (batch-stage.ts, batch-submit-page.ts, batch-watch-jobs.ts,
 * batch-job-actions.ts, batch-record.ts) over what they share (batch-shared.ts); this one puts them
 * together as the worker registers them.
 */

import { jobActionActivities } from './batch-job-actions';
import { recordActivities } from './batch-record';
import { type BatchActivityDeps, createBatchShared } from './batch-shared';
import { stageActivities } from './batch-stage';
import { submitPageActivities } from './batch-submit-page';
import { watchActivities } from './batch-watch-jobs';
import { pipelineActivities } from './pipeline';
import { pipelineRedriveActivities } from './pipeline-redrive';

export type { BatchActivityDeps } from './batch-shared';

export function createBatchActivities(deps: BatchActivityDeps) {
  const shared = createBatchShared(deps);
  return {
    ...stageActivities(shared),
    ...submitPageActivities(shared),
    ...watchActivities(shared),
    ...jobActionActivities(shared),
    ...recordActivities(shared),
    // A pipeline's stages are batch windows: its own activities share the batch's stores.
    ...pipelineActivities(shared, deps.transforms),
    ...pipelineRedriveActivities(shared),
  };
}

export type BatchActivities = ReturnType<typeof createBatchActivities>;
