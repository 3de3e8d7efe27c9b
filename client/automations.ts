/**
 * Events into automations from TypeScript: `sendEvent` validates the automation's name, the key and
 * the event (ValidationError naming the field) before anything is sent, then signals the
 * automation's workflow, starting it if it is not running (signalWithStart).
 */
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { ValidationError } from '../api/errors';
import {
  type AutomationEventInput,
  type AutomationState,
  automationKeySchema,
  automationNameSchema,
  automationWorkflowId,
  parseAutomationEvent,
} from '../contracts/automation-input';
import { automationStartOptions } from '../contracts/automation-start';
import { firstIssue } from '../contracts/input-rules';
import { tagAttributes, tagsSchema } from '../contracts/tags';
import type { automationWorkflow } from '../workflows/automation/automation';
import { automationEventSignal, automationStateQuery } from '../workflows/automation/automation-definitions';
import { DEFAULT_TASK_QUEUE } from './endpoints';

export type {
  AutomationEvent,
  AutomationEventInput,
  AutomationState,
  EmitOnEnd,
} from '../contracts/automation-input';
export {
  automationEventSchema,
  automationKeySchema,
  automationNameSchema,
  automationWorkflowId,
  MAX_EVENT_BYTES,
} from '../contracts/automation-input';

export const sendEventOptionsSchema = z.strictObject({
  /** The automation's name (defineAutomation's `name`). */
  automation: automationNameSchema,
  /** Which of its instances: events of one key are batched and run together. */
  key: automationKeySchema,
  taskQueue: z.string().min(1, { error: 'must not be empty' }).default(DEFAULT_TASK_QUEUE),
  /** Set on the automation's workflow when this event starts it (a running one keeps its own). */
  tags: tagsSchema.optional(),
});
export type SendEventOptions = z.input<typeof sendEventOptionsSchema>;

function check<T>(schema: z.ZodType<T>, value: unknown, field: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = firstIssue(parsed.error, field);
  throw new ValidationError(issue.field, issue.rule);
}

/** Sends one event to the automation `options.automation` for `options.key`. */
export async function sendEvent(
  client: Client,
  event: AutomationEventInput,
  options: SendEventOptions,
): Promise<{ workflowId: string; runId?: string }> {
  const { automation: name, key: checkedKey, taskQueue, tags } = check(sendEventOptionsSchema, options, '');
  const parsed = parseAutomationEvent(event);
  if (!parsed.ok) throw new ValidationError(parsed.field, parsed.rule);
  const workflowId = automationWorkflowId(name, checkedKey);
  const startOptions = automationStartOptions(name, checkedKey);
  startOptions.typedSearchAttributes.push(...tagAttributes(tags));
  const handle = await client.workflow.signalWithStart<typeof automationWorkflow, [typeof parsed.event]>(
    'automationWorkflow',
    {
      workflowId,
      taskQueue,
      args: [{ name, key: checkedKey }],
      // Summary, details, and the name and key for list queries (automationListQuery).
      ...startOptions,
      signal: automationEventSignal,
      signalArgs: [parsed.event],
    },
  );
  return { workflowId, runId: handle.signaledRunId };
}
export const automationTargetSchema = z.strictObject({
  automation: automationNameSchema,
  key: automationKeySchema,
});
export type AutomationTarget = z.input<typeof automationTargetSchema>;

/**
 * The automation's state for one key: events received, pending and in flight, runs started and
 * completed. It throws when no workflow runs for that key (no event was ever sent to it).
 */
export async function getAutomationState(client: Client, target: AutomationTarget): Promise<AutomationState> {
  const { automation, key } = check(automationTargetSchema, target, '');
  return client.workflow
    .getHandle<typeof automationWorkflow>(automationWorkflowId(automation, key))
    .query(automationStateQuery);
}

export {
  type AutomationDefinition,
  type AutomationRunContext,
  defineAutomation,
  type RunPlan,
} from '../activities/automation';
