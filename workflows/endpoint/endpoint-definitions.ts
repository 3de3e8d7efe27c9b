/**
 * The endpoint lifecycle workflows' query, shared with the client facade. Definitions only:
 * importing this never pulls workflow code into a client. (What they answer and return:
 * contracts/endpoint-results.ts.)
 */
import { defineQuery } from '@temporalio/workflow';
import type { LifecycleStatus } from '../../contracts/endpoint-results';

/** The current phase of any endpoint lifecycle workflow (provision, update, teardown, ephemeral). */
export const endpointLifecycleQuery = defineQuery<LifecycleStatus>('endpointLifecycle');
