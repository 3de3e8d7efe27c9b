/**
 * The bulk action's query, shared by its workflow and the client. Only definitions live here, so
 * importing this file never pulls workflow code into the client.
 */
import { defineQuery } from '@temporalio/workflow';
import type { BulkProgress } from '../../contracts/bulk-action';

/** Pages done, runs seen, acted on, skipped and failed, and the first failures. */
export const bulkProgressQuery = defineQuery<BulkProgress>('bulkProgress');
