/**
 * The order in which a backlogged task queue hands out activity tasks. A look that finds nothing
 * new is retried by the server on the job's polling schedule, so with thousands of jobs waiting
 * on one worker the looks can outrun what the worker takes from the queue. A backlog of looks must
 * not hold up the calls that start or end work (a submit, a cancel, a lease's extension): the looks
 * go below the default priority (3 of 1 to 5), and everything else keeps it.
 *
 * The server honours priority when its matcher does (Temporal Cloud; self-hosted with
 * `matching.useNewMatcher`, off by default up to v1.29); a server that does not ignores the key,
 * and the queue is first in, first out as before.
 */
import type { Priority } from '@temporalio/common';

/** The job poller's looks and the batch watchers' rounds. */
export const LOOK_PRIORITY: Priority = { priorityKey: 4 };
