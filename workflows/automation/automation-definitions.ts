/**
 * The automation workflow's signal and query, apart from its code so that the client facade and the
 * gateway import definitions only.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { AutomationEvent, AutomationState } from '../../contracts/automation-input';
import { SIGNAL_NAMES } from '../../contracts/signal-names';

/** One event for the automation; sent by signalWithStart (sendEvent, the gateway, emitEvent). */
export const automationEventSignal = defineSignal<[AutomationEvent]>(SIGNAL_NAMES.automationEvent);
export const automationStateQuery = defineQuery<AutomationState>('automationState');
