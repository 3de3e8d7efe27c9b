/**
 * The per-item tally of a finished batch, from its results file and the emulator's jobs on its
 * endpoint (deleted ones too), for the cases that kill or restart things mid-batch: the reliability
 * suite's (test/reliability) and the integration suite's (test/integration/batch-*). Every item's
 * scripted input names the item (batchItemOutput), and every job of a batch with webhooks names it
 * in its webhook URL, so the service's jobs say how often each item was submitted and how often it
 * ran.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Client } from '@temporalio/client';
import { type BatchResultLine, type BatchSummary, readBatchResults } from '../../client/batches';
import type { EmulatorControl, JobState } from '../../emulator';

/** What a tally reads: the emulator's jobs, and the workers' store (their RESULT_STORE_DIR or _URL). */
export interface TallySource {
  /** The Temporal client the batch's results are read through. */
  client: Client;
  control: EmulatorControl;
  resultDir: string;
  /** Where the results are, when not in resultDir (a store URL). */
  store?: string;
}

/** A batch item's scripted input: its output names the item, so the service's jobs say whose they are. */
export const batchItemOutput = (index: number) => ({ item: index, tag: `out-${index}` });

/**
 * The item a service job belongs to: its webhook URL names it (`&item=`,
 * activities/batch-submit-page.ts), and the emulator keeps that URL for the jobs it deleted, whose
 * input it drops; else its input's output.
 */
const itemOfJob = (job: JobState): number | undefined => {
  const fromUrl = job.webhook ? new URL(job.webhook).searchParams.get('item') : null;
  if (fromUrl !== null && /^\d+$/.test(fromUrl)) return Number(fromUrl);
  const item = (job.input?.output as { item?: unknown } | undefined)?.item;
  return typeof item === 'number' ? item : undefined;
};

export interface BatchTally {
  items: number;
  /**
   * A COMPLETED line with the item's own output, from a job of the item that ran and completed at
   * the service. Whether other jobs of the item also ran is counted apart (ranTwice).
   */
  completed: number;
  /** Lines by any other status (UNCERTAIN, FAILED, EXPIRED...). */
  statuses: Record<string, number>;
  /** A COMPLETED line with the wrong output, or not from a job of its item that completed. */
  wrong: number;
  /** Items without a line in the results file. */
  missing: number;
  /** Items neither completed right nor ending with one of the accepted statuses. */
  lost: number;
  /** Items of which two or more jobs started running on the service. */
  ranTwice: number;
  /**
   * Of those, the lease re-runs: items whose other runs all COMPLETED and were then deleted by the
   * service at their unextended submit lease (ttl counted from submission), so the batch took that
   * 404 for a lapse (a job deleted unrun) and sent the item again. Their result is still right.
   */
  ranTwiceAfterLeaseDeletion: number;
  /**
   * Items the service acted on more than once whose extra jobs never ran: sent again after the
   * first was deleted unrun at its lease (or an orphan of an uncertain submit that never ran).
   */
  sentAgain: number;
  /** Items the service never acted on. */
  neverReached: number;
  /**
   * Items by how many jobs the service made for them (/run requests it acted on, deleted jobs
   * too): `{ 1: total }` when every item was submitted exactly once.
   */
  submittedTimes: Record<number, number>;
  /** UNCERTAIN items of which the service has one job (an orphan that was never adopted). */
  uncertainWithOrphan: number;
  /** /run requests the service acted on for the batch's endpoint (the emulator's count). */
  serviceSubmissions: number;
  /** The service's jobs on the endpoint, deleted ones too: serviceSubmissions when none was forgotten. */
  serviceJobs: number;
  /** Of those, jobs that name no item (a blind spot of the other counts if not 0). */
  unattributed: number;
  /** The worst items (ran twice, wrong, lost, submitted more than once), for an assertion's message. */
  examples: string;
}

/**
 * A finished batch's outcome per item, from its results file (readBatchResults) and the service's
 * jobs on its endpoint, with those deleted (each job's input names its item: batchItemOutput).
 */
export async function tallyBatch(
  stack: TallySource,
  endpointId: string,
  summary: BatchSummary,
  accepted: string[] = [],
): Promise<BatchTally> {
  const jobsOf = new Map<number, JobState[]>();
  let unattributed = 0;
  const serviceJobs = stack.control.jobs(endpointId, { removed: true });
  for (const job of serviceJobs) {
    const item = itemOfJob(job);
    if (item === undefined) {
      unattributed += 1;
      continue;
    }
    const list = jobsOf.get(item) ?? [];
    list.push(job);
    jobsOf.set(item, list);
  }
  const lines = new Map<number, BatchResultLine>();
  for await (const line of readBatchResults(stack.client, {
    batch: summary,
    store: stack.store ?? stack.resultDir,
  }))
    lines.set(line.index, line);

  const statuses: Record<string, number> = {};
  let completed = 0;
  let wrong = 0;
  let missing = 0;
  let acceptedCount = 0;
  let ranTwice = 0;
  let ranTwiceAfterLeaseDeletion = 0;
  let sentAgain = 0;
  let neverReached = 0;
  let uncertainWithOrphan = 0;
  const submittedTimes: Record<number, number> = {};
  const bad: Array<{ rank: number; item: number; why: string }> = [];
  for (let item = 0; item < summary.total; item++) {
    const jobs = jobsOf.get(item) ?? [];
    const ran = jobs.filter((job) => job.startedAt !== undefined);
    const line = lines.get(item);
    if (jobs.length === 0) neverReached += 1;
    submittedTimes[jobs.length] = (submittedTimes[jobs.length] ?? 0) + 1;
    if (ran.length > 1) {
      ranTwice += 1;
      const others = ran.filter((job) => job.id !== line?.jobId);
      if (others.every((job) => job.status === 'COMPLETED' && job.removedReason === 'ttl'))
        ranTwiceAfterLeaseDeletion += 1;
      bad.push({ rank: 0, item, why: 'ran twice' });
    } else if (jobs.length > 1) {
      sentAgain += 1;
      bad.push({ rank: 4, item, why: 'submitted more than once' });
    }
    if (!line) {
      missing += 1;
      bad.push({ rank: 2, item, why: 'no line' });
    } else if (line.status === 'COMPLETED') {
      const right =
        isDeepStrictEqual(line.output, batchItemOutput(item)) &&
        ran.some((job) => job.id === line.jobId && job.status === 'COMPLETED');
      if (right) completed += 1;
      else {
        wrong += 1;
        bad.push({ rank: 1, item, why: 'wrong result' });
      }
    } else {
      statuses[line.status] = (statuses[line.status] ?? 0) + 1;
      if (accepted.includes(line.status)) acceptedCount += 1;
      else bad.push({ rank: 3, item, why: `ended ${line.status}` });
      if (line.status === 'UNCERTAIN' && jobs.length === 1) uncertainWithOrphan += 1;
    }
  }
  const examples = bad
    .sort((a, b) => a.rank - b.rank)
    .slice(0, 5)
    .map(({ item, why }) =>
      JSON.stringify({
        item,
        why,
        line: lines.get(item),
        service: (jobsOf.get(item) ?? []).map((job) => ({
          id: job.id,
          status: job.status,
          ran: job.startedAt !== undefined,
          removed: job.removedReason,
          ttl: job.policy.ttl,
        })),
      }),
    )
    .join('\n');
  return {
    items: summary.total,
    completed,
    statuses,
    wrong,
    missing,
    lost: summary.total - completed - acceptedCount,
    ranTwice,
    ranTwiceAfterLeaseDeletion,
    sentAgain,
    neverReached,
    submittedTimes,
    uncertainWithOrphan,
    serviceSubmissions: stack.control.submissions(endpointId),
    serviceJobs: serviceJobs.length,
    unattributed,
    examples,
  };
}

/**
 * The one-line figure of a batch case, printed for the log and the README's table; `prefix` names
 * the suite (grep for it).
 */
export function reportBatch(
  name: string,
  figures: BatchTally,
  extra: string,
  startedAt: number,
  prefix = 'RELIABILITY',
): string {
  const statuses = Object.entries(figures.statuses)
    .map(([status, count]) => `${count} ${status}`)
    .join(', ');
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(0);
  const line =
    `${prefix} ${name}: ${figures.items.toLocaleString('en-US')} items, ${figures.lost} lost, ` +
    `${figures.ranTwice} run twice, ${seconds} s (` +
    (figures.ranTwiceAfterLeaseDeletion
      ? `the ${figures.ranTwiceAfterLeaseDeletion} run twice: completed, deleted at their unextended lease, taken for a lapse and sent again; `
      : '') +
    `${figures.completed} completed with the right output ` +
    `from the one job that ran; ${figures.serviceSubmissions} /run acted on` +
    (figures.sentAgain ? `, ${figures.sentAgain} items sent again after a job deleted unrun` : '') +
    (statuses ? `; ${statuses}` : '') +
    (figures.uncertainWithOrphan ? ` (${figures.uncertainWithOrphan} UNCERTAIN with one orphan job)` : '') +
    (figures.wrong ? `; ${figures.wrong} wrong results` : '') +
    (figures.missing ? `; ${figures.missing} without a line` : '; one result line per item') +
    (figures.unattributed ? `; ${figures.unattributed} service jobs naming no item` : '') +
    (extra ? `; ${extra}` : '') +
    ')';
  console.log(line);
  return line;
}
