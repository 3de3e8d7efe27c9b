/**
 * Submitting under a lease: the pure decisions, shared by the job workflow, the submit activities
 * and the batch engine.
 *
 * The service cannot de-duplicate a submit, but it deletes every job at its ttl ("a hard limit that
 * starts at submission") and `GET /status/{id}?ttl=` sets that ttl. So a submit goes out with a short
 * ttl (the lease); once the job id is known the ttl is extended to the caller's, counted from
 * submission as the service counts it. After an uncertain submit, an orphan that finishes within its
 * lease reports itself by webhook and is adopted; one that does not is deleted by the service when
 * the lease ends. After the lease and the webhook's retry window, sending again cannot make a second
 * live job.
 *
 * Bundled into workflow code: no imports beyond pure modules.
 */

/** The spec's minimum ttl: no lease is shorter. */
export const LEASE_MIN_MS = 10_000;
/** The lease when the caller asked for the default ('auto'). */
export const DEFAULT_LEASE_MS = 60_000;
/** The spec: "up to 2 more tries, 10 seconds apart" after the first webhook call. */
export const WEBHOOK_RETRY_WINDOW_MS = 2 * 10_000;
/** Room for a webhook's delivery (gateway, signal) and for the service's clock running behind ours. */
export const WEBHOOK_MARGIN_MS = 10_000;

/**
 * The caller's setting, parsed: 'auto' (the default lease when webhooks are armed, none otherwise),
 * false (off: today's rule, onUncertainSubmit decides), or a lease in ms (on, with or without
 * webhooks).
 */
export type SubmitLeaseSetting = 'auto' | false | number;

/** What the workflow hands the submit activity: the lease ttl, and whether it needs a webhook. */
export interface LeaseRequest {
  ttlMs: number;
  onlyWithWebhook: boolean;
}

/**
 * The lease a submit asks for, before it is known whether the request names a webhook; undefined
 * when no lease can apply. Mode runsync: its answer (and with it the job id) comes only when the
 * job has finished or the wait ran out, so a lease would delete the job before it could be extended.
 */
export function leaseRequest(
  setting: SubmitLeaseSetting,
  mode: 'async' | 'sync' | 'runsync',
  callerTtlMs: number,
): LeaseRequest | undefined {
  if (setting === false || mode === 'runsync') return undefined;
  const lease = setting === 'auto' ? DEFAULT_LEASE_MS : setting;
  return { ttlMs: leaseTtl(lease, callerTtlMs), onlyWithWebhook: setting === 'auto' };
}

/**
 * The lease of an uncertain submit whose activity never reported (a worker that died mid-submit):
 * known only when the lease applies with or without a webhook. Asked with the longest caller's ttl,
 * it is an upper bound of every item's lease, so waiting it out is safe.
 */
export function unreportedLeaseTtl(lease: LeaseRequest | undefined): number | undefined {
  return lease && !lease.onlyWithWebhook ? lease.ttlMs : undefined;
}

/** ttl = min(lease, caller's ttl), never below the spec's 10 s. */
export function leaseTtl(leaseMs: number, callerTtlMs: number): number {
  return Math.max(LEASE_MIN_MS, Math.min(leaseMs, callerTtlMs));
}

/** Whether the lease applies to a request, now that it is known whether it names a webhook. */
export function leaseApplies(lease: LeaseRequest | undefined, webhookArmed: boolean): lease is LeaseRequest {
  return lease !== undefined && (webhookArmed || !lease.onlyWithWebhook);
}

/**
 * After a submit under a lease answered: the ttl to set through /status?ttl= (the service counts it
 * from submission, so it is the caller's ttl itself), or undefined when the lease already is the
 * caller's ttl.
 */
export function extensionTtl(leaseTtlMs: number, callerTtlMs: number): number | undefined {
  return callerTtlMs > leaseTtlMs ? callerTtlMs : undefined;
}

/** Room for the service's ttl timer firing a little late. */
export const LEASE_END_MARGIN_MS = 1_000;

/**
 * The latest moment the service can still hold a job submitted under a lease: it started the lease
 * when the request arrived, no later than when the answer came back. The extension is tried until
 * then (a 404 earlier says the job is already gone), and a job whose extension failed is submitted
 * again only after it, so that two copies are never live.
 */
export function leaseEndsBy(answeredAt: number, leaseTtlMs: number): number {
  return answeredAt + leaseTtlMs + LEASE_END_MARGIN_MS;
}

/**
 * The pause before the next try of a lease's extension: doubling from 1 s, but never more than a
 * quarter of what is left of the lease (nor under 250 ms), so that tries keep coming until the
 * lease ends instead of one long pause outlasting it: a 10 s lease gets about a dozen tries, not 4.
 */
export function extensionRetryPauseMs(tries: number, leftMs: number): number {
  return Math.max(250, Math.min(1_000 * 2 ** tries, 10_000, leftMs / 4));
}

/**
 * After an uncertain submit under a lease: until when to wait before submitting again. The request
 * reached the service (if at all) before the workflow learned the outcome, so the orphan is deleted
 * by `uncertainAt + lease`; if it finished first, its webhook's last retry comes within the retry
 * window after that. Without a webhook nothing can report: only the lease (and the margin) is
 * waited out, so that no orphan can still be live.
 */
export function orphanWaitUntil(uncertainAt: number, leaseTtlMs: number, webhookArmed: boolean): number {
  const window = webhookArmed ? WEBHOOK_RETRY_WINDOW_MS : 0;
  return uncertainAt + leaseTtlMs + window + WEBHOOK_MARGIN_MS;
}

/**
 * A batch's lease this long or longer is extended by its job's watcher rather than in the submit:
 * a look at the job carries the ttl (`/status?ttl=`), and most jobs of a batch are looked at once,
 * when they end. Extending each job in its submit would cost a /status request per job, which with
 * the one look makes two: a batch of short jobs then needs more of the /status limit than the
 * service gives while its workers keep up with the /run limit. A watcher that dies is retried after
 * its heartbeat timeout (30 s), so the lease must outlast that with room: twice over.
 */
export const LOOKS_EXTEND_MIN_LEASE_MS = 60_000;

/** Whether a batch job's lease of `leaseTtlMs` is extended by its watcher's looks. */
export function looksExtendLease(leaseTtlMs: number): boolean {
  return leaseTtlMs >= LOOKS_EXTEND_MIN_LEASE_MS;
}

/**
 * When the watcher extends a lease it has not extended by looking at the job before: a quarter
 * into the lease, so that a watcher that died before then is retried in time (see above).
 */
export function lookExtensionDueAt(answeredAt: number, leaseTtlMs: number): number {
  return answeredAt + Math.floor(leaseTtlMs / 4);
}
