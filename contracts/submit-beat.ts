/**
 * A submit's heartbeat, read by the workflow when the submit's activity timed out: whether a
 * request may have gone out. Shared by the submit activities and the engine's submit rules.
 */
/**
 * The heartbeat details of a submit from the moment before its first request goes out: that a
 * request may be out, with what the workflow needs to know of it. A submit whose activity timed out
 * without them sent nothing (activities/submit-beat.ts says why that holds).
 */
export interface SubmitBeat {
  sending: true;
  /** A job's submit: whether the request named a webhook, and the lease it went out under. */
  webhookArmed?: boolean;
  leaseTtlMs?: number;
  /** A job's submit: the job its request made, recorded before its lease is extended. */
  jobId?: string;
  /** A batch page's submit: the jobs it created so far. */
  created?: Array<{ i: number; id: string; ttl?: number; lease?: number }>;
}

/** Whether an activity's last heartbeat details say a submit's request may be out. */
export function beatSaysSending(details: unknown): boolean {
  return (
    typeof details === 'object' && details !== null && (details as { sending?: unknown }).sending === true
  );
}
