/**
 * A submit's beats: what the Temporal server holds of a submit's attempt, and the rule that a
 * request goes out only while that attempt lives.
 *
 * The Temporal server can lose a started activity task: it records ACTIVITY_TASK_STARTED, the
 * worker never receives the task, and the workflow sees the activity time out 2 minutes later
 * (seen under load on the dev server's SQLite store). For a submit, a timeout used to mean "the job
 * may exist", so such a lost task left a job uncertain that had never been sent. So a submit records
 * heartbeat details through the client (an RPC the server answers, not the SDK's throttled
 * heartbeat) and sends only once the server has them. A timeout whose last details lack `sending`
 * therefore means nothing was sent: the workflow submits again at once. A timeout with them stays
 * uncertain, and says the webhook and lease the request carried.
 *
 * The other way round, an attempt can end at the server (its heartbeat or start-to-close timeout)
 * while the activity still runs: a busy worker, a 429's wait. The workflow then counts an orphan's
 * lease from the moment it heard of the timeout, so a request sent after it, or a lease extended
 * after it, could make a job that outlives the wait and runs beside the next submit. Hence:
 * - every try of a request (a 429's retry too) goes out right after the server answered a beat, and
 *   only while the attempt's start-to-close time has room for it;
 * - once a job's id is known, the server records it before its lease is extended: an attempt that
 *   then times out hands the workflow the job itself, not an uncertain submit.
 *
 * All beats of one submit go out one at a time through the client, each with the latest details:
 * the server keeps only the last ones, and a beat with older details arriving later would erase
 * what a newer one recorded.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { SUBMIT_NOT_SENT } from '../contracts/failures';
import type { SubmitBeat } from '../contracts/submit-beat';

/**
 * Room kept before the attempt's start-to-close end for a request to reach the service (at most a
 * quarter of that timeout): the server started the attempt a little before this activity's code
 * ran, and the request needs time on the wire.
 */
export const SEND_ROOM_MS = 5_000;

/** How often a submit beats while it waits on the service (the server then knows the worker lives). */
const BEAT_EVERY_MS = 1_000;

/**
 * How long a beat's call may take when the activity has no heartbeat timeout. With one, a beat not
 * answered within it vouches for nothing (the server may have timed the attempt out meanwhile).
 */
const BEAT_ANSWER_MS = 5_000;

/**
 * How long a recorded beat vouches for the attempt, at most: the server times it out no sooner
 * than a heartbeat timeout after it (a quarter of that timeout is used when it is short).
 */
const BEAT_VOUCHES_MS = 1_000;

export interface SubmitBeats {
  /**
   * Records the current details at the server and resolves once it has them. Rejects when the
   * attempt may be over (the server refused or did not answer: timed out, cancelled, unreachable)
   * or when its start-to-close end is too near for a request to go out inside it.
   */
  confirm(): Promise<void>;
  /**
   * Before a request goes out: resolves at once when a beat was recorded within the last second (a
   * quarter of a shorter heartbeat timeout), which vouches that the attempt lives a while longer,
   * else as `confirm`.
   */
  readyToSend(): Promise<void>;
  /** A beat that is not waited for: the worker lives. */
  beat(): void;
  /** Runs `work`, beating every second. */
  during<T>(work: () => Promise<T>): Promise<T>;
}

/**
 * The beats of the current activity's submit. `details` is read at each beat, so what it returns may
 * grow (a page's created jobs, a job's id). `startedAt` is when the activity's code began.
 */
export function submitBeats(details: () => SubmitBeat, startedAt: number = Date.now()): SubmitBeats {
  const ctx = Context.current();
  const { startToCloseTimeoutMs } = ctx.info;
  const endsBy = startedAt + startToCloseTimeoutMs - Math.min(SEND_ROOM_MS, startToCloseTimeoutMs / 4);
  const vouchesMs = Math.min(BEAT_VOUCHES_MS, (ctx.info.heartbeatTimeoutMs ?? Number.POSITIVE_INFINITY) / 4);
  const answerWithinMs = ctx.info.heartbeatTimeoutMs || BEAT_ANSWER_MS;
  // Beats go one after another, never two at once. A caller shares the beat queued and not yet
  // sent, if there is one (it reads the details when it goes), else queues one after the last.
  let last: Promise<unknown> = Promise.resolve();
  let queued: Promise<void> | undefined;
  let recordedAt = Number.NEGATIVE_INFINITY;
  const recorded = (): Promise<void> => {
    if (queued) return queued;
    const beat = last.then(async () => {
      queued = undefined;
      const sentAt = Date.now();
      // A beat the server does not answer must not hold the submit (nor the beats queued after
      // it): past its deadline it fails, and nothing waiting on it is sent.
      await ctx.client.withDeadline(sentAt + answerWithinMs, () =>
        ctx.client.activity.heartbeat(ctx.info.taskToken, details()),
      );
      recordedAt = Math.max(recordedAt, sentAt);
    });
    queued = beat;
    last = beat.catch(() => undefined);
    return beat;
  };
  const roomLeft = () => {
    if (Date.now() > endsBy)
      throw new Error(
        `the attempt's start-to-close timeout (${ctx.info.startToCloseTimeoutMs} ms) leaves no room to send`,
      );
  };
  const beats: SubmitBeats = {
    async confirm() {
      roomLeft();
      await recorded();
    },
    async readyToSend() {
      roomLeft();
      if (Date.now() - recordedAt > vouchesMs) await recorded();
    },
    beat() {
      recorded().catch(() => undefined);
    },
    async during(work) {
      const timer = setInterval(beats.beat, BEAT_EVERY_MS);
      try {
        return await work();
      } finally {
        clearInterval(timer);
      }
    },
  };
  return beats;
}

/** A submit's first beat: fails with SubmitNotSent (retryable: nothing went out) if not recorded. */
export async function beatBeforeSending(beats: SubmitBeats): Promise<void> {
  try {
    await beats.confirm();
  } catch (error) {
    throw ApplicationFailure.create({
      type: SUBMIT_NOT_SENT,
      message: `nothing was sent: the Temporal server did not record this submit's attempt (${(error as Error).message})`,
      nonRetryable: false,
    });
  }
}
