/**
 * The per-item engine's later phases (item-engine.ts has the machine and the earlier ones): a
 * `running` item's lease, statuses and end (a hop to the next endpoint on a capacity failure, a
 * terminal status, the ttl or the lease running out) and a `retry-due` item's /retry.
 */
import { roundCost } from '../contracts/cost';
import { isCapacityFailure } from '../contracts/route';
import type { ItemEvent, ItemRules, ItemStep, RetryDueItem, RunningItem } from './item-state';
import { deadlineOf, lastLookAt } from './item-state';
import { ended, hasNextEndpoint, hop, onGrid, requeue, step, unexpected } from './item-steps';
import {
  afterTerminal,
  goneBeforeRetry,
  onExpired,
  type RetryableStatus,
  resultsExpireAt,
  whyGone,
} from './job-rules';

// --- running: its lease, its statuses, its end

export function fromRunning(item: RunningItem, event: ItemEvent, rules: ItemRules): ItemStep {
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
      const why = whyGone(event.now, lastLookAt(item), lastAliveAt, rules.submitKind);
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

export function fromRetryDue(item: RetryDueItem, event: ItemEvent, rules: ItemRules): ItemStep {
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
