/**
 * Names of the signals that activities send to workflows, and what they carry. Workflows define
 * their signals with these names (workflows/job/job-definitions.ts, workflows/automation/automation-definitions.ts);
 * activities send by name, so neither imports the other.
 */
import type { StreamChunk } from '../api/schemas/job';

export const SIGNAL_NAMES = {
  /** One batch of streamed chunks, sent by a `signal` stream sink to the workflow that asked. */
  jobStreamChunks: 'serverlessJobStreamChunks',
  /** One event for an automation; sent by signalWithStart. */
  automationEvent: 'automationEvent',
} as const;

/** One batch of streamed chunks, as a `signal` stream sink delivers it. */
export interface JobStreamBatch {
  /** The job workflow that streamed it, and the remote job. */
  workflowId: string;
  jobId: string;
  /** Index of the batch's first chunk among all chunks of this job workflow. */
  firstIndex: number;
  chunks: StreamChunk[];
}
