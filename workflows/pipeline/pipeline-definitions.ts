/**
 * The pipeline workflow's query and signals, apart from its code so that the client imports
 * definitions only. A stage's webhooks reach the pipeline by the batch's own signal and query
 * (batch-definitions.ts): a piece's number names its item in every stage's window.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PipelineProgress, PipelineSummary } from '../../contracts/pipeline-types';

/** Each stage's counts, window, buffer and cost, as they stand. */
export const pipelineProgressQuery = defineQuery<PipelineProgress>('serverlessPipelineProgress');
/** The summary as it stands: how a cancelled pipeline still gives its counts and results' place. */
export const pipelineSummaryQuery = defineQuery<PipelineSummary>('serverlessPipelineSummary');
/** Stops admitting pieces to every stage; jobs in flight carry on. */
export const pausePipelineSignal = defineSignal('serverlessPipelinePause');
export const resumePipelineSignal = defineSignal('serverlessPipelineResume');
/**
 * Sets one stage's maxConcurrency (its buffers keep their bounds); refused by the validator when
 * the stage is unknown or the stages' windows together would pass 10,000. Returns the previous value.
 */
export const setPipelineConcurrencyUpdate = defineUpdate<number, [{ stage: string; maxConcurrency: number }]>(
  'serverlessPipelineSetConcurrency',
);
