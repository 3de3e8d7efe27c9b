/**
 * What jobs, batches and endpoints cost, as the worker estimated it (contracts/cost.ts): read
 * from the job's snapshot, the batch's summary (or live progress), and for an endpoint (or the
 * whole account) the sum over its closed job and batch workflows in a time range, found by the
 * ServerlessEndpointId search attribute (by workflow type alone for the account). An estimate only: see "Metrics, traces and cost" in the README for what it leaves out.
 */
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { z } from 'zod';
import { ValidationError } from '../api/errors';
import type { BatchCost } from '../contracts/batch-summary';
import type { CostEstimate } from '../contracts/cost';
import type { serverlessJob } from '../workflows/job/job';
import { jobSnapshotQuery } from '../workflows/job/job-definitions';
import { endpointIdKey } from '../workflows/shared/search-attributes';
import { finishedSummary, getBatchProgress } from './batches';
import { getJobSnapshot, jobFailureOf, jobListQuery } from './jobs';
import { type WorkflowTarget, workflowIdOf } from './workflow-target';

export interface CostRange {
  since?: Date;
  until?: Date;
}

/** `--since`/`--until` as ISO dates; a bad date or since > until names the flag. */
export function parseCostRange(flags: { since?: string; until?: string }): CostRange {
  const date = (flag: string, raw: string | undefined): Date | undefined => {
    if (raw === undefined) return undefined;
    const parsed = z.iso.datetime({ offset: true }).or(z.iso.date()).safeParse(raw);
    const value = parsed.success ? new Date(raw) : undefined;
    if (!value || Number.isNaN(value.getTime()))
      throw new ValidationError(flag, 'must be an ISO 8601 date or date-time, e.g. 2026-11-23T00:00:00Z');
    return value;
  };
  const since = date('--since', flags.since);
  const until = date('--until', flags.until);
  if (since && until && since > until) throw new ValidationError('--since', 'must not be after --until');
  return { ...(since ? { since } : {}), ...(until ? { until } : {}) };
}

export interface JobCost {
  workflowId: string;
  /** The last finished run's estimate; absent: unfinished, or no prices on the worker. */
  cost?: CostEstimate;
}

export async function jobCost(client: Client, { workflowId }: WorkflowTarget): Promise<JobCost> {
  const snapshot = await getJobSnapshot(client, { workflowId });
  return { workflowId, ...(snapshot.cost ? { cost: snapshot.cost } : {}) };
}

export interface BatchCostReport {
  workflowId: string;
  running: boolean;
  cost: BatchCost;
  budget?: number;
  budgetExceeded?: boolean;
}

/** A running batch's running total (its progress), or a finished one's summary. */
export async function batchCost(client: Client, { workflowId }: WorkflowTarget): Promise<BatchCostReport> {
  const id = workflowIdOf(workflowId);
  const described = await client.workflow.getHandle(id).describe();
  const running = described.status.name === 'RUNNING';
  const source = running
    ? await getBatchProgress(client, { batch: workflowId })
    : await finishedSummary(client, { batch: workflowId });
  return {
    workflowId,
    running,
    // Batches from before cost was kept have none.
    cost: source.cost ?? { amount: 0, items: 0 },
    ...(source.budget !== undefined ? { budget: source.budget } : {}),
    ...(source.budgetExceeded !== undefined ? { budgetExceeded: source.budgetExceeded } : {}),
  };
}

/** What a report over a time range found, summed; `endpointId` absent: the whole account. */
export interface CostReport {
  endpointId?: string;
  since?: string;
  until?: string;
  amount: number;
  currency?: string;
  /**
   * Job workflows closed in the range; `inBatches`: those of them that are the children of a batch
   * counted here (`mode: 'children'`), whose runs its summary already holds, so not added again.
   */
  jobs: { workflows: number; withCost: number; amount: number; inBatches: number };
  batches: { workflows: number; amount: number };
}

export type EndpointCost = CostReport & { endpointId: string };

/** One workflow of a visibility listing, as far as the sums need it. */
export type ListedWorkflow = Pick<WorkflowExecutionInfo, 'workflowId' | 'parentExecution'>;

/** What the sums read: a visibility listing and each workflow's estimate (a client, or a fake in tests). */
export interface CostSource {
  list(query: string): AsyncIterable<ListedWorkflow>;
  /** A job workflow's estimate (its snapshot's), if any. */
  jobCost(workflowId: string): Promise<CostEstimate | undefined>;
  /** A closed batch's cost (its summary's), if any. */
  batchCost(workflowId: string): Promise<BatchCost | undefined>;
}

/** How long a closed job's snapshot is asked for, when neither its result nor its failure tells. */
const CLOSED_QUERY_MS = 3_000;

/**
 * A closed job workflow's cost, read from its result or its failure (history only: no worker needs
 * to answer); a job that ended otherwise (cancelled, terminated) is asked for its snapshot, which
 * a worker of its task queue answers, for a bounded time.
 */
async function closedJobCost(client: Client, workflowId: string): Promise<CostEstimate | undefined> {
  const handle = client.workflow.getHandle<typeof serverlessJob>(workflowId);
  try {
    return (await handle.result()).cost;
  } catch (error) {
    const failure = jobFailureOf(error);
    if (failure?.details) return failure.details.cost;
  }
  return client
    .withDeadline(Date.now() + CLOSED_QUERY_MS, () => handle.query(jobSnapshotQuery))
    .then((snapshot) => snapshot.cost);
}

export function costSourceOf(client: Client): CostSource {
  return {
    list: (query) => client.workflow.list({ query }),
    jobCost: (workflowId) => closedJobCost(client, workflowId),
    batchCost: async (workflowId) => (await finishedSummary(client, { batch: workflowId })).cost,
  };
}

const round = (amount: number) => Math.round(amount * 1e6) / 1e6;

/**
 * Closed in the range. A run that continued as new is left out: the chain's last run carries the
 * whole chain's cost (a batch's counters, a job's snapshot), and reading an earlier run's would
 * wait for the last one to end.
 */
function closedIn(range: CostRange): string {
  const clauses = [`ExecutionStatus != "Running"`, `ExecutionStatus != "ContinuedAsNew"`];
  if (range.since) clauses.push(`CloseTime >= "${range.since.toISOString()}"`);
  if (range.until) clauses.push(`CloseTime <= "${range.until.toISOString()}"`);
  return clauses.join(' AND ');
}

export interface CostQueries {
  jobs: string;
  batches: string;
}

/** The visibility queries of an endpoint's closed job and batch workflows (a bad id is refused). */
export function endpointCostQueries(endpointId: string, range: CostRange = {}): CostQueries {
  const jobs = `${jobListQuery({ endpointId })} AND ${closedIn(range)}`;
  // The endpoint literal was checked by jobListQuery.
  const batches = `WorkflowType = "serverlessBatch" AND ${endpointIdKey.name} = "${endpointId}" AND ${closedIn(range)}`;
  return { jobs, batches };
}

/** The same queries for every endpoint of the account (the namespace): no endpoint clause. */
export function rangeCostQueries(range: CostRange = {}): CostQueries {
  return {
    jobs: `${jobListQuery()} AND ${closedIn(range)}`,
    batches: `WorkflowType = "serverlessBatch" AND ${closedIn(range)}`,
  };
}

/**
 * The batch a child-mode item's job workflow belongs to: its id is `${batchId}/item-${index}`
 * (workflows/batch/batch-children.ts), and its parent, where visibility reports one, is that batch.
 */
function batchOfChild(workflow: ListedWorkflow): string | undefined {
  const batchId = /^(.+)\/item-\d+$/.exec(workflow.workflowId)?.[1];
  if (batchId === undefined) return undefined;
  const parent = workflow.parentExecution?.workflowId;
  return !parent || parent === batchId ? batchId : undefined;
}

/**
 * Sums the estimates of the workflows the queries find. The batches come first: a child-mode
 * batch's summary holds its items' runs, so its item job workflows (which carry the same endpoint
 * attribute) are skipped rather than counted twice. A child whose batch has no cost in the report
 * (still running, closed outside the range, terminated without a summary) counts as a job. Each
 * workflow id counts once.
 */
export async function sumCosts(
  source: CostSource,
  queries: CostQueries,
  scope: { endpointId?: string; range?: CostRange } = {},
): Promise<CostReport> {
  const { endpointId, range = {} } = scope;
  const report: CostReport = {
    ...(endpointId !== undefined ? { endpointId } : {}),
    ...(range.since ? { since: range.since.toISOString() } : {}),
    ...(range.until ? { until: range.until.toISOString() } : {}),
    amount: 0,
    jobs: { workflows: 0, withCost: 0, amount: 0, inBatches: 0 },
    batches: { workflows: 0, amount: 0 },
  };
  const batches = new Set<string>();
  // Only a batch whose cost was read holds its children's runs: a terminated one has no summary.
  const counted = new Set<string>();
  for await (const info of source.list(queries.batches)) {
    if (batches.has(info.workflowId)) continue;
    batches.add(info.workflowId);
    report.batches.workflows += 1;
    const cost = await source.batchCost(info.workflowId).catch(() => undefined);
    if (!cost) continue;
    counted.add(info.workflowId);
    report.batches.amount = round(report.batches.amount + cost.amount);
    if (cost.currency) report.currency ??= cost.currency;
  }
  const jobs = new Set<string>();
  for await (const info of source.list(queries.jobs)) {
    if (jobs.has(info.workflowId)) continue;
    jobs.add(info.workflowId);
    report.jobs.workflows += 1;
    const batchId = batchOfChild(info);
    if (batchId !== undefined && counted.has(batchId)) {
      report.jobs.inBatches += 1;
      continue;
    }
    const cost = await source.jobCost(info.workflowId).catch(() => undefined);
    if (!cost) continue;
    report.jobs.withCost += 1;
    report.jobs.amount = round(report.jobs.amount + cost.amount);
    report.currency ??= cost.currency;
  }
  report.amount = round(report.jobs.amount + report.batches.amount);
  return report;
}

/**
 * The job and batch workflows of an endpoint closed in the range, and the sum of their estimates
 * (a job's from its snapshot, a batch's from its summary). Visibility is eventually consistent: a
 * workflow closed a moment ago may be missing.
 */
export interface EndpointCostOptions extends CostRange {
  endpointId: string;
}

export async function endpointCost(
  client: Client,
  { endpointId, ...range }: EndpointCostOptions,
): Promise<EndpointCost> {
  const report = await sumCosts(costSourceOf(client), endpointCostQueries(endpointId, range), {
    endpointId,
    range,
  });
  return { ...report, endpointId };
}

/** The same over every endpoint: the job and batch workflows of the namespace closed in the range. */
export async function rangeCost(client: Client, range: CostRange = {}): Promise<CostReport> {
  return sumCosts(costSourceOf(client), rangeCostQueries(range), { range });
}
