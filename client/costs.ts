/**
 * What jobs, batches and endpoints cost, as the worker estimated it (activities/cost.ts): read
 * from the job's snapshot, the batch's summary (or live progress), and for an endpoint the sum over
 * its closed job and batch workflows in a time range, found by the ServerlessEndpointId search
 * attribute. An estimate only: see "Metrics, traces and cost" in the README for what it leaves out.
 */
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import type { CostEstimate } from '../activities/cost';
import { ValidationError } from '../api/errors';
import type { BatchCost } from '../workflows/batch-input';
import { endpointIdKey } from '../workflows/search-attributes';
import { finishedSummary, getBatchProgress } from './batches';
import { getJobSnapshot, jobListQuery } from './jobs';

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

export async function jobCost(client: Client, workflowId: string): Promise<JobCost> {
  const snapshot = await getJobSnapshot(client, workflowId);
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
export async function batchCost(client: Client, workflowId: string): Promise<BatchCostReport> {
  const described = await client.workflow.getHandle(workflowId).describe();
  const running = described.status.name === 'RUNNING';
  const source = running
    ? await getBatchProgress(client, workflowId)
    : await finishedSummary(client, workflowId);
  return {
    workflowId,
    running,
    // Batches from before cost was kept have none.
    cost: source.cost ?? { amount: 0, items: 0 },
    ...(source.budget !== undefined ? { budget: source.budget } : {}),
    ...(source.budgetExceeded !== undefined ? { budgetExceeded: source.budgetExceeded } : {}),
  };
}

export interface EndpointCost {
  endpointId: string;
  since?: string;
  until?: string;
  amount: number;
  currency?: string;
  jobs: { workflows: number; withCost: number; amount: number };
  batches: { workflows: number; amount: number };
}

const round = (amount: number) => Math.round(amount * 1e6) / 1e6;

function closedIn(range: CostRange): string {
  const clauses = [`ExecutionStatus != "Running"`];
  if (range.since) clauses.push(`CloseTime >= "${range.since.toISOString()}"`);
  if (range.until) clauses.push(`CloseTime <= "${range.until.toISOString()}"`);
  return clauses.join(' AND ');
}

/** The visibility queries of an endpoint's closed job and batch workflows (a bad id is refused). */
export function endpointCostQueries(
  endpointId: string,
  range: CostRange = {},
): { jobs: string; batches: string } {
  const jobs = `${jobListQuery({ endpointId })} AND ${closedIn(range)}`;
  // The endpoint literal was checked by jobListQuery.
  const batches = `WorkflowType = "serverlessBatch" AND ${endpointIdKey.name} = "${endpointId}" AND ${closedIn(range)}`;
  return { jobs, batches };
}

/**
 * The job and batch workflows of an endpoint closed in the range, and the sum of their estimates
 * (a job's from its snapshot, a batch's from its summary). Visibility is eventually consistent: a
 * workflow closed a moment ago may be missing.
 */
export async function endpointCost(
  client: Client,
  endpointId: string,
  range: CostRange = {},
): Promise<EndpointCost> {
  const queries = endpointCostQueries(endpointId, range);
  const report: EndpointCost = {
    endpointId,
    ...(range.since ? { since: range.since.toISOString() } : {}),
    ...(range.until ? { until: range.until.toISOString() } : {}),
    amount: 0,
    jobs: { workflows: 0, withCost: 0, amount: 0 },
    batches: { workflows: 0, amount: 0 },
  };
  for await (const info of client.workflow.list({ query: queries.jobs })) {
    report.jobs.workflows += 1;
    const { cost } = await jobCost(client, info.workflowId).catch(() => ({ cost: undefined }));
    if (!cost) continue;
    report.jobs.withCost += 1;
    report.jobs.amount = round(report.jobs.amount + cost.amount);
    report.currency ??= cost.currency;
  }
  for await (const info of client.workflow.list({ query: queries.batches })) {
    report.batches.workflows += 1;
    const summary = await finishedSummary(client, info.workflowId).catch(() => undefined);
    if (!summary?.cost) continue;
    report.batches.amount = round(report.batches.amount + summary.cost.amount);
    if (summary.cost.currency) report.currency ??= summary.cost.currency;
  }
  report.amount = round(report.jobs.amount + report.batches.amount);
  return report;
}
