/**
 * The beat a submit sends before its first request goes out, and waits for.
 *
 * The Temporal server can lose a started activity task: it records ACTIVITY_TASK_STARTED, the
 * worker never receives the task, and the workflow sees the activity time out 2 minutes later
 * (seen under load on the dev server's SQLite store). For a submit, a timeout used to mean "the job
 * may exist", so such a lost task left a job uncertain that had never been sent.
 *
 * So a submit first records heartbeat details through the client (an RPC the server answers, not the
 * SDK's throttled heartbeat), and sends only once the server has them. A timeout whose last
 * heartbeat details lack them therefore means nothing was sent: the workflow submits again at once.
 * A timeout with them stays uncertain, and now also says the webhook and lease the request carried.
 * Every later heartbeat of the submit repeats the details: the server keeps only the last ones.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { SUBMIT_NOT_SENT } from '../contracts/failures';
import type { SubmitBeat } from '../contracts/submit-beat';

/** Records `beat` at the server before anything is sent; fails with SubmitNotSent if it cannot. */
export async function beatBeforeSending(beat: SubmitBeat): Promise<void> {
  const ctx = Context.current();
  try {
    await ctx.client.activity.heartbeat(ctx.info.taskToken, beat);
  } catch (error) {
    throw ApplicationFailure.create({
      type: SUBMIT_NOT_SENT,
      message: `nothing was sent: the Temporal server did not record this submit's attempt (${(error as Error).message})`,
      nonRetryable: false,
    });
  }
}

/** Heartbeats `beat` every second while `fn` runs (the SDK throttles what it sends to the server). */
export async function whileBeating<T>(beat: SubmitBeat, fn: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat(beat);
  const timer = setInterval(() => ctx.heartbeat(beat), 1_000);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
  }
}
