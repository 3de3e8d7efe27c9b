/**
 * Chaining: a job, a batch, a pipeline or an automation run that ends sends one event to an automation
 * (`emitOnEnd` in its input), `{ id: <workflow id>:<run id>:end, type, data: summary }`. The id makes
 * a repeat (a retried activity, a replayed end) a duplicate the receiving automation drops.
 *
 * One command at the very end of the job, batch and pipeline workflows, only when the option is set. A failed
 * emit is logged, never the end of the work that emits it.
 */
import { ApplicationFailure, ContinueAsNew, log, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { AutomationActivities } from '../../activities/automation';
import { emitEventSummary } from '../../contracts/activity-summaries';
import { type EmitOnEnd, type JsonValue, MAX_EVENT_BYTES } from '../../contracts/automation-input';

const { emitEvent } = proxyActivities<AutomationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 10, nonRetryableErrorTypes: ['BadRequest'] },
});

/** The key an end event goes to when the input names none. */
export const DEFAULT_EMIT_KEY = 'default';

/** Room for the event's id and type besides its data. */
const MAX_DATA_BYTES = MAX_EVENT_BYTES - 2048;

function bounded(data: Record<string, unknown>, fallback: Record<string, unknown>): JsonValue {
  const text = JSON.stringify(data);
  return JSON.parse(
    new TextEncoder().encode(text).length <= MAX_DATA_BYTES ? text : JSON.stringify(fallback),
  );
}

/** The failure a job or batch ended with, as end-event data (its first detail when small). */
export function failureData(error: unknown): Record<string, unknown> {
  let cause: unknown = error;
  while (cause instanceof Error && !(cause instanceof ApplicationFailure) && cause.cause) cause = cause.cause;
  if (cause instanceof ApplicationFailure) {
    const detail = cause.details?.[0];
    return {
      type: cause.type ?? 'Error',
      message: cause.message,
      ...(detail !== undefined ? { details: detail } : {}),
    };
  }
  return { type: 'Error', message: error instanceof Error ? error.message : String(error) };
}

/** Whether an error ends the workflow (a continue-as-new does not: no end event for it). */
export function isEnd(error: unknown): boolean {
  return !(error instanceof ContinueAsNew);
}

export async function emitOnEnd(
  target: EmitOnEnd | undefined,
  type:
    | 'job.completed'
    | 'job.failed'
    | 'batch.completed'
    | 'batch.failed'
    | 'pipeline.completed'
    | 'pipeline.failed',
  data: Record<string, unknown>,
): Promise<void> {
  if (!target) return;
  const { workflowId, runId } = workflowInfo();
  const event = {
    id: `${workflowId}:${runId}:end`,
    type,
    data: bounded(data, { type: data.type ?? type, message: 'the summary was too large for an event' }),
  };
  try {
    const key = target.key ?? DEFAULT_EMIT_KEY;
    await emitEvent.executeWithOptions({ summary: emitEventSummary(type, target.automation, key) }, [
      { automation: target.automation, key, event },
    ]);
  } catch (error) {
    log.warn('the end event was not sent', { automation: target.automation, error: String(error) });
  }
}
