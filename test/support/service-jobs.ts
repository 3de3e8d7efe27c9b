/**
 * Waiting until the service runs a given number of an endpoint's jobs: the point where a test's jobs
 * are all submitted and running. Nothing announces it but the emulator's state, so it is polled.
 *
 * Given the workflows that submit the jobs, a workflow that ended while its job is not running can
 * never get there: the wait fails at once with that workflow's failure (a lost submit's reason, for
 * one), instead of hanging until the test's own timeout says nothing. Past the bound (a hang guard
 * only) the error says how far the jobs got: the service's jobs by status, its count of submits, and
 * what the first workflows with no job are doing.
 */
import type { Client } from '@temporalio/client';
import type { EmulatorControl } from '../../emulator';
import { describeWorkflowWait } from './workflow-waits';

/** Hang guard for a few hundred to a thousand submits on a loaded 2-core machine. */
const DEFAULT_HANG_GUARD_MS = 600_000;
/** How often the workflows with no job yet are looked at. */
const WORKFLOW_LOOK_MS = 5_000;
/** They are looked at only when this few are left (a thousand describes a look would be a load). */
const MOST_WORKFLOWS_LOOKED_AT = 50;

export interface JobsInProgressOptions {
  hangGuardMs?: number;
  /**
   * The workflows that submit the jobs, the one whose job answers `{ index: k }` (hourLongJob) at
   * `ids[k]`.
   */
  workflows?: { client: Client; ids: readonly string[] };
}

export async function jobsInProgress(
  control: Pick<EmulatorControl, 'jobs' | 'submissions'>,
  endpointId: string,
  count: number,
  { hangGuardMs = DEFAULT_HANG_GUARD_MS, workflows }: JobsInProgressOptions = {},
): Promise<void> {
  const what = `${count} jobs of endpoint ${endpointId} IN_PROGRESS at the service`;
  const deadline = Date.now() + hangGuardMs;
  let nextLook = Date.now() + WORKFLOW_LOOK_MS;
  for (;;) {
    const jobs = control.jobs(endpointId);
    if (jobs.filter((job) => job.status === 'IN_PROGRESS').length === count) return;
    const atService = `at the service: ${countByStatus(jobs)}; ${control.submissions(endpointId)} submits`;
    const missing = workflows ? idsWithNoJob(jobs, workflows.ids) : [];
    if (workflows && Date.now() >= nextLook && missing.length <= MOST_WORKFLOWS_LOOKED_AT) {
      nextLook = Date.now() + WORKFLOW_LOOK_MS;
      const ended = await endedWorkflows(workflows.client, missing);
      if (ended.length > 0)
        throw new Error(
          `${what}: ${ended.length} workflows ended with no job; ${atService}; ${ended.join(' | ')}`,
        );
    }
    if (Date.now() > deadline) {
      const shown = workflows
        ? await Promise.all(missing.slice(0, 5).map((id) => describeWorkflowWait(workflows.client, id)))
        : [];
      const explained = workflows
        ? `; ${missing.length} workflows with no job, the first: ${shown.join(' | ')}`
        : '';
      throw new Error(`${what}: not reached within ${hangGuardMs} ms; ${atService}${explained}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function countByStatus(jobs: ReadonlyArray<{ status: string }>): string {
  const byStatus = new Map<string, number>();
  for (const job of jobs) byStatus.set(job.status, (byStatus.get(job.status) ?? 0) + 1);
  return [...byStatus].map(([status, jobsWithIt]) => `${status} ${jobsWithIt}`).join(', ') || 'no jobs';
}

/** The workflows whose index no job at the service answers with. */
function idsWithNoJob(jobs: ReadonlyArray<{ input?: unknown }>, ids: readonly string[]): string[] {
  const seen = new Set(
    jobs.map((job) => (job.input as { output?: { index?: number } } | undefined)?.output?.index),
  );
  return ids.filter((_, index) => !seen.has(index));
}

/** What each of the given workflows that is no longer running is, in one line. */
async function endedWorkflows(client: Client, ids: readonly string[]): Promise<string[]> {
  const statuses = await Promise.all(
    ids.map(async (id) => {
      const { status } = await client.workflow.getHandle(id).describe();
      return status.name === 'RUNNING' ? undefined : id;
    }),
  );
  const ended = statuses.filter((id): id is string => id !== undefined);
  return Promise.all(ended.map((id) => describeWorkflowWait(client, id)));
}
