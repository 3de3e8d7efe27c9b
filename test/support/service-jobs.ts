/**
 * Waiting until the service runs a given number of an endpoint's jobs: the point where a test's jobs
 * are all submitted and running. Nothing announces it but the emulator's state, so it is polled;
 * the bound is a hang guard only, and past it the error says how far the jobs got (the service's
 * jobs by status and its count of submits), so a slow machine and a lost submit tell apart.
 */
import type { Client } from '@temporalio/client';
import type { EmulatorControl } from '../../emulator';
import { pollUntil } from './poll';
import { describeWorkflowWait } from './workflow-waits';

/** Hang guard for a few hundred to a thousand submits on a loaded 2-core machine. */
const DEFAULT_HANG_GUARD_MS = 600_000;

export interface JobsInProgressOptions {
  hangGuardMs?: number;
  /** More for the error past the hang guard: e.g. what the workflows with no job yet are doing. */
  explain?: () => Promise<string>;
}

export async function jobsInProgress(
  control: Pick<EmulatorControl, 'jobs' | 'submissions'>,
  endpointId: string,
  count: number,
  { hangGuardMs = DEFAULT_HANG_GUARD_MS, explain }: JobsInProgressOptions = {},
): Promise<void> {
  await pollUntil(
    `${count} jobs of endpoint ${endpointId} IN_PROGRESS at the service`,
    () => {
      const jobs = control.jobs(endpointId);
      const running = jobs.filter((job) => job.status === 'IN_PROGRESS').length;
      if (running === count) return true;
      const byStatus = new Map<string, number>();
      for (const job of jobs) byStatus.set(job.status, (byStatus.get(job.status) ?? 0) + 1);
      const counts = [...byStatus].map(([status, jobsWithIt]) => `${status} ${jobsWithIt}`).join(', ');
      throw new Error(`at the service: ${counts || 'no jobs'}; ${control.submissions(endpointId)} submits`);
    },
    { timeoutMs: hangGuardMs, intervalMs: 100 },
  ).catch(async (error: Error) => {
    if (!explain) throw error;
    throw new Error(`${error.message}; ${await explain()}`, { cause: error });
  });
}

/**
 * An `explain` for jobs that answer `{ index }` (the workflow of index k at `workflowIds[k]`): what
 * the workflows of the first few indexes with no job at the service are doing.
 */
export function explainMissingIndexes(
  control: Pick<EmulatorControl, 'jobs'>,
  endpointId: string,
  client: Client,
  workflowIds: readonly string[],
): () => Promise<string> {
  return async () => {
    const seen = new Set(
      control
        .jobs(endpointId)
        .map((job) => (job.input as { output?: { index?: number } } | undefined)?.output?.index),
    );
    const missing = workflowIds.filter((_, index) => !seen.has(index));
    const shown = await Promise.all(missing.slice(0, 5).map((id) => describeWorkflowWait(client, id)));
    return `${missing.length} workflows with no job, the first: ${shown.join(' | ')}`;
  };
}
