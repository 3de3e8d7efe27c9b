/**
 * The endpoint gate's updates and query, shared with the client facade and the CLI. Definitions
 * only: importing this never pulls workflow code into a client.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import {
  ASK_TO_SEND_UPDATE,
  type GateControls,
  type GateView,
  type SendAsk,
  type SendGrant,
} from '../../contracts/endpoint-gate';

/** A submit asks room for its requests; answered once granted, or with none after a window's wait. */
export const askToSendUpdate = defineUpdate<SendGrant, [SendAsk]>(ASK_TO_SEND_UPDATE);
/** The operator pauses, resumes, sets the limit or the weights; answers the gate's view after. */
export const setGateControlsUpdate = defineUpdate<GateView, [GateControls]>('setGateControls');
/** The gate's controls, window and fairness keys. */
export const gateViewQuery = defineQuery<GateView>('gateView');
