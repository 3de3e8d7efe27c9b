/**
 * An endpoint's shared limits, live: what its gate (workflows/endpoint/endpoint-gate.ts) holds and
 * grants, and the operator's controls over it: pause and resume its submits, set its /run limit,
 * weigh its fairness keys. The controls apply at once to every workload on the endpoint, in every
 * worker process.
 *
 *   await setEndpointLimits(client, 'ep-1', { paused: true }, { taskQueue: 'serverless' });
 *   await getEndpointLimits(client, 'ep-1'); // { paused: true, runLimit: 1000, keys: [...] }
 */
import { type Client, WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { ValidationError } from '../api/errors';
import { pathSegmentSchema } from '../api/schemas/path-segment';
import {
  ENDPOINT_GATE_WORKFLOW,
  type EndpointGateInput,
  endpointGateId,
  type GateControls,
  type GateView,
  gateControlsSchema,
} from '../contracts/endpoint-gate';
import { firstIssue } from '../contracts/input-rules';
import { gateViewQuery, setGateControlsUpdate } from '../workflows/endpoint/endpoint-gate-definitions';
import { checked } from './checked';

export type { GateControls, GateView } from '../contracts/endpoint-gate';

function endpointIdOf(endpointId: unknown): string {
  const parsed = pathSegmentSchema.safeParse(endpointId);
  if (!parsed.success) throw new ValidationError('endpointId', firstIssue(parsed.error).rule);
  return parsed.data;
}

/**
 * The endpoint's gate as it is now: paused or not, its /run limit and the operator's override,
 * the requests in its current window, and per fairness key the requests waiting and granted.
 * Undefined when no gate runs for the endpoint (nothing submitted to it lately, and no control set).
 */
export async function getEndpointLimits(client: Client, endpointId: string): Promise<GateView | undefined> {
  const handle = client.workflow.getHandle(endpointGateId(endpointIdOf(endpointId)));
  try {
    return await handle.query(gateViewQuery);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    // A gate that ended idle (nothing to hold): the same as none.
    if ((error as { message?: string }).message?.includes('workflow execution already completed')) {
      return undefined;
    }
    throw error;
  }
}

const controlOptionsSchema = z.strictObject({
  /** Where the gate runs if it must be started (the workers' task queue). */
  taskQueue: z.string().min(1, { error: 'must name the task queue the workers poll' }),
});

/**
 * Changes the endpoint's controls (each field optional; what is absent stays) and answers the
 * gate's view after the change. Starts the gate if none runs, so a pause set before any work
 * holds for the work that comes. A gate with controls set keeps running until they are cleared.
 */
export async function setEndpointLimits(
  client: Client,
  endpointId: string,
  controls: GateControls,
  options: { taskQueue: string },
): Promise<GateView> {
  const id = endpointIdOf(endpointId);
  const checkedControls = checked(gateControlsSchema, controls);
  const { taskQueue } = checked(controlOptionsSchema, options, 'options');
  const startGate = new WithStartWorkflowOperation(ENDPOINT_GATE_WORKFLOW, {
    workflowId: endpointGateId(id),
    taskQueue,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [{ endpointId: id } satisfies EndpointGateInput],
  });
  return client.workflow.executeUpdateWithStart(setGateControlsUpdate, {
    args: [checkedControls],
    startWorkflowOperation: startGate,
  });
}
