/**
 * The per-item engine: what happens to one remote job, from its first submit to its end, as one
 * pure state machine. `stepItem(item, event, rules)` takes an item's state and something that
 * happened to it (a submit's answer, a status seen, a lease's extension, a due time reached) and
 * returns the item's next state, the counters the event moves and any one-off command.
 *
 * The job workflow drives it for one item; the batch drives it for many and turns the phases into
 * page-sized activities. What an item needs next is its phase:
 * - `queued`: submit it (not before `notBefore`);
 * - `uncertain`: its submit may have made a job whose id never came; wait until `waitUntil` for the
 *   orphan's webhook (adopt it: `orphan-reported`), then `wait-over`;
 * - `running`: watch it; while `lease` is set, extend its ttl (contracts/submit-lease.ts);
 * - `retry-due`: at `retryAt`, `retry-time` checks it can still be retried, then /retry;
 * - `ended`: its outcome, with the facts its result line or failure carries.
 *
 * No clock, no Temporal: times come in the events, so the job workflow, the batch and the unit
 * tests get the same answers from the same inputs. The numbers (backoffs, deadlines, retention)
 * are the rules of job-rules.ts and contracts/submit-lease.ts.
 */
import { roundCost } from '../contracts/cost';
import { isCapacityFailure } from '../contracts/route';
import { extensionTtl, orphanWaitUntil } from '../contracts/submit-lease';
import type {
  ItemEvent,
  ItemRules,
  ItemState,
  ItemStep,
  QueuedItem,
  RetryDueItem,
  RunningItem,
  UncertainItem,
} from './item-state';
import { deadlineOf } from './item-state';
import { ended, hasNextEndpoint, hop, onGrid, placed, requeue, step, tally, unexpected } from './item-steps';
import {
  afterTerminal,
  goneBeforeRetry,
  onExpired,
  onUncertainSubmit,
  type RetryableStatus,
  resubmitAfterLease,
  resultsExpireAt,
  submitRetryDelayMs,
  whyGone,
} from './job-rules';

export function stepItem(item: ItemState, event: ItemEvent, rules: ItemRules): ItemStep {
  if (event.kind === 'abandoned') return abandoned(item, event);
  switch (item.phase) {
    case 'queued':
      return fromQueued(item, event, rules);
    case 'uncertain':
      return fromUncertain(item, event, rules);
    case 'running':
      return fromRunning(item, event, rules);
    case 'retry-due':
      return fromRetryDue(item, event, rules);
    case 'ended':
      return unexpected(item, event);
  }
}

function abandoned(item: ItemState, event: Extract<ItemEvent, { kind: 'abandoned' }>): ItemStep {
  const { now, reason } = event;
  switch (item.phase) {
    case 'running':
      return step(ended(item, 'cancelled', event.status ?? 'CANCELLED', now, { reason }));
    case 'retry-due':
      return step(
        ended(item, item.status === 'TIMED_OUT' ? 'timedOut' : 'failed', item.status, now, { reason }),
      );
    case 'uncertain':
      return step(ended(item, 'uncertain', 'UNCERTAIN', now, { reason }));
    default:
      // Never submitted (or ended already): nothing to end.
      return step(item);
  }
}

// --- queued: its submit's answer

function fromQueued(item: QueuedItem, event: ItemEvent, rules: ItemRules): ItemStep {
  switch (event.kind) {
    case 'submitted': {
      const lease = event.leaseTtlMs;
      const pending =
        lease !== undefined && !event.extended && extensionTtl(lease, event.ttlMs) !== undefined;
      const { endpoint: _endpoint, ...counted } = tally(item);
      const running: RunningItem = {
        phase: 'running',
        ...counted,
        ...placed(event.endpoint ?? item.endpoint),
        attempts: item.attempts + 1,
        submissions: item.submissions + 1,
        jobId: event.jobId,
        status: 'IN_QUEUE',
        submittedAt: event.sentAt,
        ttlMs: event.ttlMs,
        adopted: false,
        aliveAt: event.answeredAt,
        ...(pending ? { lease: { ttlMs: lease, answeredAt: event.answeredAt } } : {}),
      };
      return step(running, ['submission']);
    }
    case 'rejected': {
      const tries = item.rejectedTries + 1;
      const delay = submitRetryDelayMs(event.rejection, tries);
      if (delay !== undefined) return step({ ...item, rejectedTries: tries, notBefore: event.now + delay });
      const { type, message } = event.rejection;
      return step(ended(item, 'rejected', 'REJECTED', event.now, { reason: message, failureType: type }));
    }
    case 'uncertain': {
      const lease = event.leaseTtlMs;
      const waited =
        lease !== undefined
          ? orphanWaitUntil(event.answeredAt, lease, event.webhookArmed)
          : event.answeredAt + (event.webhookArmed ? rules.uncertainSubmitWait : 0);
      // A wait ending later is always safe: no orphan can report after it, nor run past its lease.
      const waitUntil = waited > event.answeredAt ? onGrid(waited, rules.waitGridMs) : waited;
      const { endpoint: _endpoint, ...counted } = tally(item);
      const uncertain: UncertainItem = {
        phase: 'uncertain',
        ...counted,
        ...placed(event.endpoint ?? item.endpoint),
        submissions: item.submissions + 1,
        sentAt: event.sentAt,
        waitUntil,
        webhookArmed: event.webhookArmed,
        ...(event.ttlMs === undefined ? {} : { ttlMs: event.ttlMs }),
        ...(lease === undefined ? {} : { lease: { ttlMs: lease, answeredAt: event.answeredAt } }),
      };
      return step(uncertain, ['submission', 'uncertainSubmit']);
    }
    default:
      return unexpected(item, event);
  }
}

// --- uncertain: an orphan reports itself, or the wait ends

function fromUncertain(item: UncertainItem, event: ItemEvent, rules: ItemRules): ItemStep {
  if (event.kind === 'orphan-reported') {
    const ttlMs = event.extendedTo ?? item.ttlMs ?? event.defaultTtlMs;
    const lease = item.lease;
    const pending =
      lease !== undefined && event.extendedTo === undefined && extensionTtl(lease.ttlMs, ttlMs) !== undefined;
    const running: RunningItem = {
      phase: 'running',
      ...tally(item),
      attempts: item.attempts + 1,
      jobId: event.jobId,
      status: 'IN_QUEUE',
      submittedAt: item.sentAt,
      ttlMs,
      adopted: true,
      aliveAt: event.now,
      ...(pending ? { lease: { ...lease } } : {}),
    };
    return step(running, ['uncertainAdopted']);
  }
  if (event.kind !== 'wait-over') return unexpected(item, event);
  const now = item.waitUntil;
  if (item.lease !== undefined) {
    // No orphan reported within its lease and the webhook window: none can still run.
    if (!event.stopping && resubmitAfterLease(rules, item.submissions)) {
      return step(requeue(item), ['resubmittedAfterLease']);
    }
    const reason = event.stopping
      ? 'the submit may have created a job whose id never arrived; the work stopped'
      : `the submit was uncertain and maxSubmissions (${rules.maxSubmissions}) and maxLeaseResubmits ` +
        `(${rules.maxLeaseResubmits}) are spent; no orphan of it can still run (its lease has run out)`;
    return step(ended(item, 'uncertain', 'UNCERTAIN', now, { reason }));
  }
  const decision = onUncertainSubmit(rules, item.submissions);
  if (decision.choice === 'resubmit' && !event.stopping) return step(requeue(item));
  const why = decision.choice === 'fail' ? decision.why : 'the work stopped';
  return step(
    ended(item, 'uncertain', 'UNCERTAIN', now, {
      reason: `the submit may have created a job whose id never arrived; ${why}`,
    }),
  );
}

// --- running: its lease, its statuses, its end

function fromRunning(item: RunningItem, event: ItemEvent, rules: ItemRules): ItemStep {
  switch (event.kind) {
    case 'lease-extended': {
      const { lease: _lease, ...rest } = item;
      return step({ ...rest, ttlMs: event.ttlMs ?? item.ttlMs });
    }
    case 'lease-unsettled':
      return item.lease ? step({ ...item, lease: { ...item.lease, unsettled: true } }) : step(item);
    case 'ttl-extended':
      return step({ ...item, ttlMs: event.ttlMs });
    case 'observed':
      return step({ ...item, status: event.status });
    case 'withdrawn':
      // Seen started before any cancel: it stays where it is.
      if (event.outcome === 'started') return step({ ...item, status: 'IN_PROGRESS' });
      return hop(item, rules);
    case 'finished':
      return finished(item, event, rules);
    case 'gone': {
      if (item.lease !== undefined) return leaseLapsed(item, event.now, event.stopping, rules);
      // Seen alive lately (by the event's source, or by the workflow itself), its results cannot
      // have expired yet: the ttl deleted it.
      const lastAliveAt = Math.max(event.lastAliveAt ?? item.aliveAt, item.aliveAt);
      const why = whyGone(event.now, deadlineOf(item), item.ttlMs, lastAliveAt, rules.submitKind);
      const reason =
        why === 'ttl'
          ? 'its ttl passed (the service answers 404)'
          : 'the service no longer knows it (404): it finished unseen and its results expired';
      return cancelling(item, expire(item, why, reason, event.now, event.stopping, rules));
    }
    case 'deadline': {
      const what = event.status
        ? `its ttl deadline came while it was ${event.status}`
        : 'its ttl passed (the service answers 404)';
      return cancelling(item, expire(item, 'ttl', what, event.now, event.stopping, rules));
    }
    default:
      return unexpected(item, event);
  }
}

function finished(
  item: RunningItem,
  event: Extract<ItemEvent, { kind: 'finished' }>,
  rules: ItemRules,
): ItemStep {
  const withCost: RunningItem =
    event.cost === undefined ? item : { ...item, cost: roundCost((item.cost ?? 0) + event.cost) };
  if (
    event.status === 'FAILED' &&
    hasNextEndpoint(item, rules) &&
    isCapacityFailure(event.error, rules.capacityFailures)
  )
    return hop(withCost, rules);
  const decision = afterTerminal(event.status, rules.retry, item.retries);
  switch (decision.kind) {
    case 'completed':
      return step(ended(withCost, 'completed', 'COMPLETED', event.now));
    case 'cancelled':
      return step(
        ended(withCost, 'cancelled', 'CANCELLED', event.now, { reason: 'cancelled outside this workflow' }),
      );
    case 'give-up':
      return step(
        ended(withCost, decision.status === 'FAILED' ? 'failed' : 'timedOut', decision.status, event.now, {
          ...(event.error === undefined ? {} : { reason: event.error }),
        }),
      );
    case 'retry': {
      const { lease: _lease, status: _status, ...job } = withCost;
      const retryAt = onGrid(event.now + decision.backoffMs, rules.retryGridMs);
      return step({
        ...job,
        phase: 'retry-due',
        status: event.status as RetryableStatus,
        finishedAt: event.now,
        retryAt,
      });
    }
  }
}

/**
 * A job given up before it was seen finished (a 404, its deadline) is cancelled, so that nothing of
 * it can run on beside its replacement (or after its failure).
 */
function cancelling(item: RunningItem, result: ItemStep): ItemStep {
  return { ...result, commands: [...result.commands, { kind: 'cancel', jobId: item.jobId }] };
}

/** The job's lease ran out unextended: the service deleted it, so submitting again is safe. */
function leaseLapsed(item: RunningItem, now: number, stopping: boolean, rules: ItemRules): ItemStep {
  if (item.submissions < rules.maxSubmissions && !stopping) return step(requeue(item), ['leaseLapse']);
  const reason =
    `its submit lease ran out before it could be extended, and maxSubmissions (${rules.maxSubmissions}) ` +
    'is reached';
  return step(ended(item, 'expired', 'EXPIRED', now, { reason, expired: 'ttl' }), ['leaseLapse']);
}

/** An expired job: submitted afresh, or the end, as the caller chose and the submissions allow. */
function expire(
  item: RunningItem | RetryDueItem,
  why: 'ttl' | 'results',
  reason: string,
  now: number,
  stopping: boolean,
  rules: ItemRules,
): ItemStep {
  if (onExpired(rules, item.submissions) === 'resubmit' && !stopping) return step(requeue(item));
  return step(ended(item, 'expired', 'EXPIRED', now, { reason, expired: why }));
}

// --- retry-due: the backoff is over

function fromRetryDue(item: RetryDueItem, event: ItemEvent, rules: ItemRules): ItemStep {
  switch (event.kind) {
    case 'retry-time': {
      const gone = goneBeforeRetry(
        event.now,
        deadlineOf(item),
        resultsExpireAt(item.finishedAt, rules.submitKind),
      );
      if (gone === 'ttl')
        return expire(
          item,
          'ttl',
          'its ttl passed during the retry backoff',
          event.now,
          event.stopping,
          rules,
        );
      if (gone === 'results')
        return expire(
          item,
          'results',
          'its results expired during the retry backoff',
          event.now,
          event.stopping,
          rules,
        );
      return step(item, [], [{ kind: 'retry' }]);
    }
    case 'retried': {
      const { finishedAt: _finishedAt, retryAt: _retryAt, ...job } = item;
      const running: RunningItem = {
        ...job,
        phase: 'running',
        status: event.status,
        attempts: item.attempts + 1,
        retries: item.retries + 1,
        aliveAt: event.now,
      };
      return step(running, ['retry']);
    }
    case 'retry-gone':
      return expire(
        item,
        'results',
        'the service no longer knows it (404 on /retry)',
        event.now,
        event.stopping,
        rules,
      );
    case 'retry-unanswered':
      return step({ ...item, retryAt: event.now + event.pauseMs });
    case 'retry-failed':
      return step(
        ended(item, item.status === 'TIMED_OUT' ? 'timedOut' : 'failed', item.status, event.now, {
          reason: `its /retry failed: ${event.error}`,
        }),
      );
    default:
      return unexpected(item, event);
  }
}
