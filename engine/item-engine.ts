import { extensionTtl, orphanWaitUntil } from '../contracts/submit-lease';
import { fromRetryDue, fromRunning } from './item-running';
import type {
  ItemEvent,
  ItemRules,
  ItemState,
  ItemStep,
  QueuedItem,
  RunningItem,
  UncertainItem,
} from './item-state';
import { ended, onGrid, placed, requeue, step, tally, unexpected } from './item-steps';
import { noRoomRetryDelayMs, onUncertainSubmit, resubmitAfterLease, submitRetryDelayMs } from './job-rules';

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
      if (event.rejection.noRoom) {
        const noRoomTries = (item.noRoomTries ?? 0) + 1;
        return step({ ...item, noRoomTries, notBefore: event.now + noRoomRetryDelayMs(noRoomTries) });
      }
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
