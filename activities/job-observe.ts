/**
 * Turns a /status body into the small JobObservation the workflow keeps: outputs too large for
 * history go to the result store, progress updates and error texts are kept only when short.
 */
import { isTerminalStatus, type JobStatus } from '../api/schemas/job';
import type { CostEstimate } from '../contracts/cost';
import type { JobObservation } from '../contracts/job-types';
import { inlineOrStore, jsonBytes, type ResultStore } from '../stores/result-store';

export interface ObserveOptions {
  store: ResultStore;
  /** Result store key prefix: the workflow id, so a retried activity overwrites instead of adding. */
  keyPrefix: string;
  inlineMaxBytes: number;
  progressMaxBytes: number;
  errorMaxChars: number;
  /** Told of a run seen in a final status (metrics), and returns its cost estimate if there is one. */
  onFinished?: (status: JobStatus) => Promise<CostEstimate | undefined>;
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The progress update, or a note of its size when it is too large to carry around. */
export function smallProgress(output: unknown, maxBytes: number): unknown {
  const bytes = jsonBytes(output);
  if (bytes !== undefined && bytes <= maxBytes) return output;
  return { omitted: true, bytes: bytes ?? null };
}

export async function observe(
  jobId: string,
  status: JobStatus,
  options: ObserveOptions,
): Promise<JobObservation> {
  const observation: JobObservation = { jobId, status: status.status, observedAt: Date.now() };
  if (status.delayTime !== undefined) observation.delayTime = status.delayTime;
  if (status.executionTime !== undefined) observation.executionTime = status.executionTime;
  if (status.status === 'COMPLETED' && status.output !== undefined) {
    Object.assign(
      observation,
      await inlineOrStore(
        options.store,
        `${options.keyPrefix}/${jobId}`,
        status.output,
        options.inlineMaxBytes,
      ),
    );
  }
  if (status.status === 'FAILED' && status.error !== undefined) {
    observation.error = shorten(status.error, options.errorMaxChars);
  }
  if (status.status === 'IN_PROGRESS' && status.output !== undefined) {
    observation.progress = smallProgress(status.output, options.progressMaxBytes);
  }
  if (isTerminalStatus(status.status) && options.onFinished) {
    const cost = await options.onFinished(status);
    if (cost) observation.cost = cost;
  }
  return observation;
}
