/**
 * Visibility queries that find the library's work in the Temporal UI's list, the CLI
 * (`temporal workflow list --query`) and client.workflow.list: batches by endpoint and state,
 * automations by name and key, the runs of a schedule, and (in client/jobs.ts) jobs by endpoint,
 * status or the workflow that started them.
 */
import { z } from 'zod';
import { ValidationError } from '../api/errors';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import { firstIssue } from '../contracts/input-rules';
import { tagSchema } from '../contracts/tags';
import {
  automationKeyKey,
  automationNameKey,
  endpointIdKey,
  tagsKey,
} from '../workflows/shared/search-attributes';

/** A value as a string literal of the query: anything that could end the literal is refused. */
export function queryLiteral(field: string, value: string): string {
  const unsafe = [...value].some(
    (char) => char === '"' || char === "'" || char === '\\' || char.charCodeAt(0) < 0x20,
  );
  if (unsafe) throw new ValidationError(field, 'must not contain quotes, backslashes or control characters');
  return `"${value}"`;
}

/** Runs started with this tag (a keyword list matches when it holds the value); the tag is already checked. */
export function tagClause(tag: string): string {
  return `${tagsKey.name} = "${tag}"`;
}

/** Running only, closed only, or (undefined) both. */
export function runningClause(running: boolean | undefined): string[] {
  if (running === undefined) return [];
  return [running ? `ExecutionStatus = "Running"` : `ExecutionStatus != "Running"`];
}

function parsed<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const { field, rule } = firstIssue(result.error, 'filter');
  throw new ValidationError(field, rule);
}

export const batchFilterSchema = z.strictObject({
  endpointId: pathSegmentSchema.optional(),
  running: z.boolean().optional(),
  /** Only those started with this tag. */
  tag: tagSchema.optional(),
});
export type BatchFilter = z.input<typeof batchFilterSchema>;

/** Batches, of an endpoint and running or ended: `batchListQuery({ endpointId: 'x', running: true })`. */
export function batchListQuery(filter: BatchFilter = {}): string {
  const { endpointId, running, tag } = parsed(batchFilterSchema, filter);
  const clauses = [`WorkflowType = "serverlessBatch"`];
  if (endpointId !== undefined)
    clauses.push(`${endpointIdKey.name} = ${queryLiteral('filter.endpointId', endpointId)}`);
  if (tag !== undefined) clauses.push(tagClause(tag));
  return [...clauses, ...runningClause(running)].join(' AND ');
}

export const automationFilterSchema = z.strictObject({
  name: z.string().min(1).optional(),
  key: z.string().min(1).optional(),
  running: z.boolean().optional(),
  /** Only those started with this tag. */
  tag: tagSchema.optional(),
});
export type AutomationFilter = z.input<typeof automationFilterSchema>;

/** Automations by name and key (each name and key is one workflow, continued as new while it lives). */
export function automationListQuery(filter: AutomationFilter = {}): string {
  const { name, key, running, tag } = parsed(automationFilterSchema, filter);
  const clauses = [`WorkflowType = "automationWorkflow"`];
  if (name !== undefined) clauses.push(`${automationNameKey.name} = ${queryLiteral('filter.name', name)}`);
  if (key !== undefined) clauses.push(`${automationKeyKey.name} = ${queryLiteral('filter.key', key)}`);
  if (tag !== undefined) clauses.push(tagClause(tag));
  return [...clauses, ...runningClause(running)].join(' AND ');
}

/** Every run a schedule started (Temporal's own TemporalScheduledById), of any workflow type. */
export function scheduleRunsQuery(scheduleId: string, options: { running?: boolean } = {}): string {
  return [
    `TemporalScheduledById = ${queryLiteral('scheduleId', scheduleId)}`,
    ...runningClause(options.running),
  ].join(' AND ');
}

/**
 * The workflows a batch (mode 'children'), an automation or an ephemeral endpoint started: their
 * children, by Temporal's own ParentWorkflowId.
 */
export function startedByClause(workflowId: string, field = 'filter.startedBy'): string {
  return `ParentWorkflowId = ${queryLiteral(field, workflowId)}`;
}
