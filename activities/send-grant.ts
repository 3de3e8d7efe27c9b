/**
 * Asks the endpoint's gate (workflows/endpoint/endpoint-gate.ts) for room to send: an update-with-start
 * from the activity that will send, so the first ask on an endpoint starts its gate. While the ask
 * waits, the activity beats straight to the server with no details, as a submit waiting to send
 * does (submit-beat.ts): nothing is out yet.
 */
import { Context } from '@temporalio/activity';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
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

/** Tries of one ask: a gate that continued as new or ended as the ask came is asked again. */
const ASK_TRIES = 5;

/** How a submit asks its endpoint's gate for room: askToSend below; a test may give its own gate. */
export type AskToSend = (ask: SendAsk) => Promise<SendGrant>;

export async function askToSend(ask: SendAsk): Promise<SendGrant> {
  const ctx = Context.current();
  const beatEvery = Math.max(ctx.info.heartbeatTimeoutMs ?? 30_000, 1_000) / 3;
  const timer = setInterval(() => {
    ctx.client.activity.heartbeat(ctx.info.taskToken).catch(() => undefined);
  }, beatEvery);
  try {
    for (let tries = 1; ; tries++) {
      const startGate = new WithStartWorkflowOperation(ENDPOINT_GATE_WORKFLOW, {
        workflowId: endpointGateId(ask.endpointId),
        taskQueue: ctx.info.taskQueue,
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{ endpointId: ask.endpointId } satisfies EndpointGateInput],
      });
      try {
        const grant = await ctx.client.workflow.executeUpdateWithStart(ASK_TO_SEND_UPDATE, {
          args: [ask],
          startWorkflowOperation: startGate,
        });
        return sendGrantSchema.parse(grant);
      } catch (error) {
        if (tries >= ASK_TRIES || ctx.cancellationSignal.aborted) throw error;
        await ctx.sleep(100 * tries);
      }
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
    const grant = await (deps.askToSend ?? askToSend)({ endpointId, count: asked, limit, ...scheduling });
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
