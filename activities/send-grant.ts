/**
 * Asks the endpoint's gate (workflows/endpoint/endpoint-gate.ts) for room to send: an update-with-start
 * from the activity that will send, so the first ask on an endpoint starts its gate. While the ask
 * waits, the activity beats straight to the server with no details, as a submit waiting to send
 * does (submit-beat.ts): nothing is out yet.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { ServiceClient } from '../api';
import { type LibraryMetrics, noopMetrics } from '../api/metrics';
import {
  ASK_TO_SEND_UPDATE,
  ASK_WAIT_MS,
  DEFAULT_FAIRNESS_KEY,
  ENDPOINT_GATE_WORKFLOW,
  type EndpointGateInput,
  endpointGateId,
  type Scheduling,
  type SendAsk,
  type SendGrant,
  sendGrantSchema,
} from '../contracts/endpoint-gate';
import { SUBMIT_NOT_SENT } from '../contracts/failures';

/** A gate that could not answer (busy, continuing as new): ask again after this, with some jitter. */
const BUSY_RETRY_MS = 200;

/** How long one ask may take to be answered (a gate answers at once; its worker may be gone). */
const ANSWER_MS = 5_000;

/**
 * The gate's answer, or a failure once the activity is cancelled (a worker shutting down) or the
 * answer is late: an update whose workflow no worker runs would be waited for without end.
 */
function answeredInTime<T>(ctx: Context, call: Promise<T>): Promise<T> {
  call.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ANSWER_MS} ms`)), ANSWER_MS);
  });
  return Promise.race([call, ctx.cancelled, late]).finally(() => clearTimeout(timer));
}

/** How a submit asks its endpoint's gate for room: askToSend below; a test may give its own gate. */
export type AskToSend = (ask: Omit<SendAsk, 'id'>) => Promise<SendGrant>;

/**
 * Asks until the gate grants room or ASK_WAIT_MS have passed (then a grant of 0: the caller plans
 * its requests again). Each ask is answered at once, with room or the time to ask again; the same
 * id each time keeps the ask's place in the gate's order.
 */
export async function askToSend(ask: Omit<SendAsk, 'id'>): Promise<SendGrant> {
  const ctx = Context.current();
  const id = randomUUID();
  const giveUpAt = Date.now() + ASK_WAIT_MS;
  const beatEvery = Math.max(ctx.info.heartbeatTimeoutMs ?? 30_000, 1_000) / 3;
  const timer = setInterval(() => {
    ctx.client.activity.heartbeat(ctx.info.taskToken).catch(() => undefined);
  }, beatEvery);
  try {
    for (;;) {
      const startGate = new WithStartWorkflowOperation(ENDPOINT_GATE_WORKFLOW, {
        workflowId: endpointGateId(ask.endpointId),
        taskQueue: ctx.info.taskQueue,
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{ endpointId: ask.endpointId } satisfies EndpointGateInput],
      });
      let retryAt: number;
      try {
        const answer = sendGrantSchema.parse(
          await answeredInTime(
            ctx,
            ctx.client.workflow.executeUpdateWithStart(ASK_TO_SEND_UPDATE, {
              args: [{ ...ask, id } satisfies SendAsk],
              startWorkflowOperation: startGate,
            }),
          ),
        );
        if (answer.count > 0) return answer;
        retryAt = answer.retryAt ?? Date.now() + BUSY_RETRY_MS;
      } catch (error) {
        // The gate refused the ask itself (its validator): a bug to report, not to wait out.
        if (error instanceof WorkflowUpdateFailedError || error instanceof CancelledFailure) throw error;
        retryAt = Date.now() + BUSY_RETRY_MS * (1 + Math.random());
      }
      const now = Date.now();
      if (now >= giveUpAt) return { count: 0, at: now, sendBy: now };
      await ctx.sleep(Math.max(1, Math.min(retryAt, giveUpAt) - now));
    }
  } finally {
    clearInterval(timer);
  }
}

/** What a submit asks its endpoint's gate with. */
export interface GateDeps {
  /** Its /run limit (the gate holds it); without a finite one, nothing to hold. */
  client: Partial<Pick<ServiceClient, 'rateLimit'>>;
  /** The gate; default: askToSend above. */
  askToSend?: AskToSend | undefined;
  metrics?: LibraryMetrics | undefined;
}

/**
 * Room for `count` requests to the endpoint now: the gate's grant under the client's /run limit
 * (at most one window's worth is asked at once), or all of them, with no time to keep, when the
 * client keeps no rate for /run.
 */
export async function grantToSend(
  deps: GateDeps,
  endpointId: string,
  count: number,
  scheduling: Scheduling = {},
): Promise<{ count: number; sendBy?: number }> {
  const limit = deps.client.rateLimit?.('run')?.perTenSeconds;
  if (limit === undefined || !Number.isFinite(limit)) return { count };
  const asked = Math.min(count, limit);
  const key = scheduling.fairnessKey ?? DEFAULT_FAIRNESS_KEY;
  const metrics = deps.metrics ?? noopMetrics;
  metrics.sendWaiting(endpointId, key, asked);
  try {
    let grant: SendGrant;
    try {
      grant = await (deps.askToSend ?? askToSend)({ endpointId, count: asked, limit, ...scheduling });
    } catch (error) {
      if (error instanceof CancelledFailure) throw error;
      // Nothing can have been sent before a grant: the caller's requests are planned again.
      throw ApplicationFailure.create({
        type: SUBMIT_NOT_SENT,
        message: `nothing was sent: endpoint ${endpointId}'s gate did not answer (${(error as Error).message})`,
        nonRetryable: false,
      });
    }
    metrics.sendGrant(endpointId, key, 'granted', grant.count);
    if (grant.count < asked) metrics.sendGrant(endpointId, key, 'refused', asked - grant.count);
    return { count: grant.count, sendBy: grant.sendBy };
  } finally {
    metrics.sendWaiting(endpointId, key, -asked);
  }
}

/** A submit that got no room at its endpoint's gate: nothing was sent, and the workflow submits again. */
export function windowFull(endpointId: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: SUBMIT_NOT_SENT,
    message: `nothing was sent: endpoint ${endpointId}'s gate had no room in its /run window for ${ASK_WAIT_MS} ms (paused, or busy with work that goes first)`,
    nonRetryable: false,
  });
}
