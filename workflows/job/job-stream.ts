/**
 * The job's stream: one draining activity per job run, started before the job is seen finished and
 * given a while to drain after it has, then cut. Its chunks go to the caller's sink, never into
 * history; the snapshot counts them.
 */
import { CancellationScope, condition, isCancellation, workflowInfo } from '@temporalio/workflow';
import { streamDrainSummary, streamJobSummary } from '../../contracts/activity-summaries';
import type { StreamSink } from '../../contracts/job-types';
import { activityOutcome, JOB_FAILURE, jobFailure } from '../shared/job-failures';
import { streamActivities } from './job-activities';
import { jobDeadline } from './job-item';
import { details, isTerminal, type Run } from './job-run';

/** How long a stream may take to drain after its job has finished. */
const STREAM_FINISH_MS = 2 * 60_000;

/** The caller's sink; a signal sink without a workflow id signals the parent workflow. */
export function resolveSink(run: Run): StreamSink | undefined {
  const sink = run.job.options.stream?.sink;
  if (sink?.kind !== 'signal' || sink.workflowId) return sink;
  const parent = workflowInfo().parent;
  if (!parent) {
    throw jobFailure(
      JOB_FAILURE.badRequest,
      'a signal stream sink without workflowId needs a parent workflow to signal',
      details(run, { field: 'stream.sink.workflowId', rule: 'is required without a parent workflow' }),
    );
  }
  return { kind: 'signal', workflowId: parent.workflowId, runId: parent.runId };
}

export function startStream(run: Run): void {
  if (!run.sink || !run.s.stream || isTerminal(run.s.status)) return;
  const scope = new CancellationScope();
  const stream = { scope, done: false };
  run.stream = stream;
  const counts = run.s.stream;
  scope
    .run(() =>
      streamActivities(run.job.polling, jobDeadline(run).deadline - Date.now()).streamJob.executeWithOptions(
        { summary: streamJobSummary(run.s.jobId as string) },
        [
          {
            endpointId: run.s.endpointId,
            jobId: run.s.jobId as string,
            sink: run.sink as StreamSink,
            firstIndex: counts.chunks,
            polling: run.job.polling,
          },
        ],
      ),
    )
    .then(
      (result) => {
        counts.chunks += result.chunks;
      },
      (error: unknown) => {
        if (!isCancellation(error)) counts.error = activityOutcome(error)?.message ?? String(error);
      },
    )
    .finally(() => {
      stream.done = true;
    });
}

/** The stream ends on its own once the job has finished; it gets a while to drain, then it is cut. */
export async function finishStream(run: Run, jobGone: boolean): Promise<void> {
  const stream = run.stream;
  if (!stream) return;
  run.stream = undefined;
  if (
    !jobGone &&
    (await condition(() => stream.done, STREAM_FINISH_MS, {
      summary: streamDrainSummary(run.s.jobId as string, STREAM_FINISH_MS),
    }))
  )
    return;
  if (!stream.done) {
    stream.scope.cancel();
    if (!jobGone && run.s.stream)
      run.s.stream.error = 'the stream did not end within 2 minutes of the job finishing';
  }
}
