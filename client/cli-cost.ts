/**
 * `durable-serverless cost ...`: what a job, a batch or an endpoint cost, as the worker estimated
 * it (client/costs.ts).
 *
 *   npm run cli -- cost job my-job
 *   npm run cli -- cost batch nightly
 *   npm run cli -- cost endpoint ep-1 --since 2026-11-01T00:00:00Z --until 2026-12-01T00:00:00Z
 *   npm run cli -- cost range --since 2026-11-01T00:00:00Z --until 2026-12-01T00:00:00Z
 *
 * Plain text by default, `--json` for a machine. Bad flags are refused before anything is contacted.
 */
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { ValidationError } from '../api/errors';
import {
  batchCost,
  type CostReport,
  endpointCost,
  endpointCostQueries,
  jobCost,
  parseCostRange,
  rangeCost,
} from './costs';

export interface CostCliContext {
  out: (text: string) => void;
  connect: () => Promise<Client>;
}

const money = (amount: number, currency: string | undefined) => `${amount}${currency ? ` ${currency}` : ''}`;

/** A range report in one line: the total, then what it is made of. */
const breakdown = (report: CostReport) =>
  `${money(report.amount, report.currency)} ` +
  `(${report.jobs.withCost} of ${report.jobs.workflows - report.jobs.inBatches} jobs with an estimate: ${report.jobs.amount}; ` +
  `${report.batches.workflows} batches: ${report.batches.amount}` +
  `${report.jobs.inBatches > 0 ? `, with ${report.jobs.inBatches} child jobs` : ''})`;

export function addCostCommands(program: Command, ctx: CostCliContext): void {
  const cost = program
    .command('cost')
    .description('estimated cost of a job, a batch, an endpoint or everything in a time range');
  const show = (json: boolean | undefined, value: unknown, text: string) =>
    ctx.out(json ? `${JSON.stringify(value, null, 2)}\n` : `${text}\n`);

  cost
    .command('job')
    .description("a job's estimated cost (its last finished run)")
    .argument('<workflow-id>')
    .option('--json', 'print JSON')
    .action(async (workflowId: string, flags: { json?: boolean }) => {
      const report = await jobCost(await ctx.connect(), { workflowId });
      show(
        flags.json,
        report,
        report.cost
          ? `${workflowId}: ${money(report.cost.amount, report.cost.currency)} (${report.cost.seconds} s on ${report.cost.tier})`
          : `${workflowId}: no estimate (not finished, or the worker has no prices)`,
      );
    });

  cost
    .command('batch')
    .description("a batch's estimated cost (its summary, or its running total while it runs)")
    .argument('<workflow-id>')
    .option('--json', 'print JSON')
    .action(async (workflowId: string, flags: { json?: boolean }) => {
      const report = await batchCost(await ctx.connect(), { workflowId });
      const budget =
        report.budget === undefined
          ? ''
          : `, budget ${report.budget}${report.budgetExceeded ? ' (submissions stopped by it)' : ''}`;
      show(
        flags.json,
        report,
        `${workflowId}: ${money(report.cost.amount, report.cost.currency)} over ${report.cost.items} runs` +
          `${report.running ? ' so far' : ''}${budget}`,
      );
    });

  cost
    .command('endpoint')
    .description('the estimated cost of the job and batch workflows of an endpoint closed in a range')
    .argument('<endpoint-id>')
    .option('--since <iso>', 'closed at or after this date-time (ISO 8601)')
    .option('--until <iso>', 'closed at or before this date-time (ISO 8601)')
    .option('--json', 'print JSON')
    .action(async (endpointId: string, flags: { since?: string; until?: string; json?: boolean }) => {
      // Checked before connecting: a bad range names its flag and contacts nothing.
      const range = parseCostRange(flags);
      endpointCostQueries(endpointId, range);
      const report = await endpointCost(await ctx.connect(), { endpointId, ...range });
      show(flags.json, report, `${endpointId}: ${breakdown(report)}`);
    });

  cost
    .command('range')
    .description('the estimated cost of every job and batch workflow closed in a range (all endpoints)')
    .option('--since <iso>', 'closed at or after this date-time (ISO 8601; required)')
    .option('--until <iso>', 'closed at or before this date-time (ISO 8601; required)')
    .option('--json', 'print JSON')
    .action(async (flags: { since?: string; until?: string; json?: boolean }) => {
      // Checked before connecting. Both ends are required: without them the report would read
      // every closed workflow of the namespace, one query each.
      for (const flag of ['since', 'until'] as const)
        if (flags[flag] === undefined)
          throw new ValidationError(`--${flag}`, 'is required (an ISO 8601 date or date-time)');
      const range = parseCostRange(flags);
      const report = await rangeCost(await ctx.connect(), range);
      show(flags.json, report, `${report.since} to ${report.until}: ${breakdown(report)}`);
    });
}
