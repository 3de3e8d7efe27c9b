/**
 * The per-item engine, alone: tables of (state, event) -> (next state, counts, commands), with no
 * Temporal and no service. The job workflow and the batch drive this same function, so each case
 * here holds for both.
 */
import { describe, expect, it } from 'vitest';
import { stepItem } from '../../engine/item-engine';
import {
  dueOf,
  type ItemEvent,
  type ItemRules,
  type ItemState,
  queuedItem,
  type RetryDueItem,
  type RunningItem,
  type UncertainItem,
} from '../../engine/item-state';

const rules: ItemRules = {
  retry: { maxRetries: 2, initialInterval: 1_000, backoffCoefficient: 2, on: ['FAILED', 'TIMED_OUT'] },
  onExpired: 'fail',
  onUncertainSubmit: 'fail',
  maxSubmissions: 3,
  maxLeaseResubmits: 2,
  uncertainSubmitWait: 30_000,
  submitKind: 'run',
  retryGridMs: 1,
  waitGridMs: 1,
  routeLength: 1,
  capacityFailures: [],
};
const resubmitting: ItemRules = { ...rules, onExpired: 'resubmit', onUncertainSubmit: 'resubmit' };

const running = (extra: Partial<RunningItem> = {}): RunningItem => ({
  phase: 'running',
  index: 7,
  attempts: 1,
  submissions: 1,
  retries: 0,
  jobId: 'job-1',
  status: 'IN_PROGRESS',
  submittedAt: 1_000,
  ttlMs: 86_400_000,
  adopted: false,
  aliveAt: 1_200,
  ...extra,
});
const retryDue = (extra: Partial<RetryDueItem> = {}): RetryDueItem => ({
  phase: 'retry-due',
  index: 7,
  attempts: 1,
  submissions: 1,
  retries: 0,
  jobId: 'job-1',
  status: 'FAILED',
  submittedAt: 1_000,
  ttlMs: 86_400_000,
  adopted: false,
  aliveAt: 1_200,
  finishedAt: 10_000,
  retryAt: 11_000,
  ...extra,
});
const uncertain = (extra: Partial<UncertainItem> = {}): UncertainItem => ({
  phase: 'uncertain',
  index: 7,
  attempts: 0,
  submissions: 1,
  retries: 0,
  sentAt: 1_000,
  waitUntil: 31_000,
  webhookArmed: true,
  ...extra,
});

interface Case {
  name: string;
  from: ItemState;
  event: ItemEvent;
  rules?: ItemRules;
  to: Record<string, unknown>;
  counts?: string[];
  commands?: unknown[];
}

const submitted = {
  kind: 'submitted',
  jobId: 'job-1',
  ttlMs: 86_400_000,
  sentAt: 1_000,
  answeredAt: 1_200,
} as const;

const cases: Case[] = [
  // --- submitting
  {
    name: 'a submit that made a job: running, in queue, one submission and one attempt',
    from: queuedItem(7),
    event: submitted,
    to: {
      phase: 'running',
      jobId: 'job-1',
      status: 'IN_QUEUE',
      attempts: 1,
      submissions: 1,
      submittedAt: 1_000,
    },
    counts: ['submission'],
  },
  {
    name: 'under a lease shorter than the caller ttl: the lease waits for its extension',
    from: queuedItem(7),
    event: { ...submitted, leaseTtlMs: 60_000 },
    to: { phase: 'running', lease: { ttlMs: 60_000, answeredAt: 1_200 } },
    counts: ['submission'],
  },
  {
    name: 'under a lease already extended by the submit: nothing left to extend',
    from: queuedItem(7),
    event: { ...submitted, leaseTtlMs: 60_000, extended: true },
    to: { phase: 'running', lease: undefined },
    counts: ['submission'],
  },
  {
    name: 'a lease as long as the caller ttl needs no extension',
    from: queuedItem(7),
    event: { ...submitted, ttlMs: 60_000, leaseTtlMs: 60_000 },
    to: { phase: 'running', lease: undefined },
    counts: ['submission'],
  },
  {
    name: 'a retryable rejection waits its backoff (1 s after the first try)',
    from: queuedItem(7),
    event: {
      kind: 'rejected',
      rejection: { retryable: true, type: 'Unavailable', message: '503' },
      now: 5_000,
    },
    to: { phase: 'queued', rejectedTries: 1, notBefore: 6_000, submissions: 0 },
  },
  {
    name: "a 429's Retry-After longer than the backoff is honoured",
    from: queuedItem(7),
    event: {
      kind: 'rejected',
      rejection: { retryable: true, retryAfterMs: 7_000, type: 'RateLimited', message: '429' },
      now: 5_000,
    },
    to: { phase: 'queued', notBefore: 12_000 },
  },
  {
    name: 'a rejection that cannot be retried ends the item REJECTED with its type',
    from: queuedItem(7),
    event: {
      kind: 'rejected',
      rejection: { retryable: false, type: 'BadRequest', message: 'bad input' },
      now: 5_000,
    },
    to: {
      phase: 'ended',
      outcome: 'rejected',
      status: 'REJECTED',
      reason: 'bad input',
      failureType: 'BadRequest',
    },
  },
  {
    name: 'the eighth retryable rejection in a row ends the item',
    from: { ...queuedItem(7), rejectedTries: 7 },
    event: {
      kind: 'rejected',
      rejection: { retryable: true, type: 'Unavailable', message: '503' },
      now: 5_000,
    },
    to: { phase: 'ended', outcome: 'rejected' },
  },
  {
    name: 'a try the gate had no room for is no rejection: it waits its own backoff, its tries apart',
    from: { ...queuedItem(7), rejectedTries: 2 },
    event: {
      kind: 'rejected',
      rejection: { retryable: true, noRoom: true, type: 'SubmitNotSent', message: 'no room' },
      now: 5_000,
    },
    to: { phase: 'queued', rejectedTries: 2, noRoomTries: 1, notBefore: 6_000, submissions: 0 },
  },
  {
    name: 'the twentieth try in a row the gate had no room for still waits, a minute at most',
    from: { ...queuedItem(7), rejectedTries: 7, noRoomTries: 19 },
    event: {
      kind: 'rejected',
      rejection: { retryable: true, noRoom: true, type: 'SubmitNotSent', message: 'no room' },
      now: 5_000,
    },
    to: { phase: 'queued', rejectedTries: 7, noRoomTries: 20, notBefore: 65_000 },
  },
  {
    name: 'an uncertain submit with a webhook waits uncertainSubmitWait for its orphan',
    from: queuedItem(7),
    event: { kind: 'uncertain', sentAt: 1_000, answeredAt: 2_000, webhookArmed: true },
    to: { phase: 'uncertain', waitUntil: 32_000, submissions: 1, attempts: 0 },
    counts: ['submission', 'uncertainSubmit'],
  },
  {
    name: 'an uncertain submit without a webhook has nothing to wait for',
    from: queuedItem(7),
    event: { kind: 'uncertain', sentAt: 1_000, answeredAt: 2_000, webhookArmed: false },
    to: { phase: 'uncertain', waitUntil: 2_000 },
    counts: ['submission', 'uncertainSubmit'],
  },
  {
    name: 'an uncertain submit under a lease waits the lease, the webhook retries and a margin',
    from: queuedItem(7),
    event: { kind: 'uncertain', sentAt: 1_000, answeredAt: 2_000, webhookArmed: true, leaseTtlMs: 60_000 },
    to: {
      phase: 'uncertain',
      waitUntil: 2_000 + 60_000 + 20_000 + 10_000,
      lease: { ttlMs: 60_000, answeredAt: 2_000 },
    },
    counts: ['submission', 'uncertainSubmit'],
  },
  {
    name: 'an uncertain wait ends on the grid (the batch sends close uncertain pages again as one)',
    from: queuedItem(7),
    event: { kind: 'uncertain', sentAt: 1_000, answeredAt: 2_000, webhookArmed: true, leaseTtlMs: 60_000 },
    rules: { ...rules, waitGridMs: 15_000 },
    to: { phase: 'uncertain', waitUntil: 105_000 },
    counts: ['submission', 'uncertainSubmit'],
  },
  // --- uncertain
  {
    name: 'an orphan that reports itself is adopted: running, counted from the submit',
    from: uncertain(),
    event: { kind: 'orphan-reported', jobId: 'orphan', now: 5_000, defaultTtlMs: 86_400_000 },
    to: { phase: 'running', jobId: 'orphan', adopted: true, attempts: 1, submissions: 1, submittedAt: 1_000 },
    counts: ['uncertainAdopted'],
  },
  {
    name: 'an adopted orphan under a lease still needs its extension',
    from: uncertain({ lease: { ttlMs: 60_000, answeredAt: 2_000 }, ttlMs: 3_600_000 }),
    event: { kind: 'orphan-reported', jobId: 'orphan', now: 5_000, defaultTtlMs: 86_400_000 },
    to: { phase: 'running', ttlMs: 3_600_000, lease: { ttlMs: 60_000, answeredAt: 2_000 } },
    counts: ['uncertainAdopted'],
  },
  {
    name: 'an adopted orphan the look already extended needs nothing more',
    from: uncertain({ lease: { ttlMs: 60_000, answeredAt: 2_000 } }),
    event: {
      kind: 'orphan-reported',
      jobId: 'orphan',
      now: 5_000,
      defaultTtlMs: 86_400_000,
      extendedTo: 3_600_000,
    },
    to: { phase: 'running', ttlMs: 3_600_000, lease: undefined },
    counts: ['uncertainAdopted'],
  },
  {
    name: 'no orphan, onUncertainSubmit fail: UNCERTAIN, saying why',
    from: uncertain(),
    event: { kind: 'wait-over', stopping: false },
    to: {
      phase: 'ended',
      outcome: 'uncertain',
      status: 'UNCERTAIN',
      reason: expect.stringContaining('onUncertainSubmit is fail'),
    },
  },
  {
    name: 'no orphan, onUncertainSubmit resubmit: queued again',
    from: uncertain(),
    event: { kind: 'wait-over', stopping: false },
    rules: resubmitting,
    to: { phase: 'queued', submissions: 1, rejectedTries: 0 },
  },
  {
    name: 'no orphan, resubmit but maxSubmissions reached: UNCERTAIN',
    from: uncertain({ submissions: 3 }),
    event: { kind: 'wait-over', stopping: false },
    rules: resubmitting,
    to: {
      phase: 'ended',
      outcome: 'uncertain',
      reason: expect.stringContaining('maxSubmissions (3) is reached'),
    },
  },
  {
    name: 'no orphan within the lease: submitted again, even with onUncertainSubmit fail',
    from: uncertain({ lease: { ttlMs: 60_000, answeredAt: 2_000 }, submissions: 3 }),
    event: { kind: 'wait-over', stopping: false },
    to: { phase: 'queued' },
    counts: ['resubmittedAfterLease'],
  },
  {
    name: 'no orphan within the lease and maxSubmissions + maxLeaseResubmits spent: UNCERTAIN',
    from: uncertain({ lease: { ttlMs: 60_000, answeredAt: 2_000 }, submissions: 5 }),
    event: { kind: 'wait-over', stopping: false },
    to: { phase: 'ended', outcome: 'uncertain', reason: expect.stringContaining('its lease has run out') },
  },
  {
    name: 'no orphan while the work stops: UNCERTAIN, never submitted again',
    from: uncertain({ lease: { ttlMs: 60_000, answeredAt: 2_000 } }),
    event: { kind: 'wait-over', stopping: true },
    to: { phase: 'ended', outcome: 'uncertain', reason: expect.stringContaining('the work stopped') },
  },
  // --- running: lease
  {
    name: 'an extended lease leaves the job under the caller ttl',
    from: running({ lease: { ttlMs: 60_000, answeredAt: 1_200 } }),
    event: { kind: 'lease-extended' },
    to: { phase: 'running', lease: undefined, ttlMs: 86_400_000 },
  },
  {
    name: 'an extension neither made nor refused is left for the watcher to settle',
    from: running({ lease: { ttlMs: 60_000, answeredAt: 1_200 } }),
    event: { kind: 'lease-unsettled' },
    to: { phase: 'running', lease: { ttlMs: 60_000, answeredAt: 1_200, unsettled: true } },
  },
  {
    name: 'a 404 under a lease: the lease lapsed, submitted again (safe: the service deleted it)',
    from: running({ lease: { ttlMs: 60_000, answeredAt: 1_200 } }),
    event: { kind: 'gone', now: 62_000, stopping: false },
    to: { phase: 'queued', submissions: 1, attempts: 1 },
    counts: ['leaseLapse'],
  },
  {
    name: 'a lapsed lease with maxSubmissions reached: EXPIRED',
    from: running({ lease: { ttlMs: 60_000, answeredAt: 1_200 }, submissions: 3 }),
    event: { kind: 'gone', now: 62_000, stopping: false },
    to: {
      phase: 'ended',
      outcome: 'expired',
      status: 'EXPIRED',
      expired: 'ttl',
      reason: expect.stringContaining('lease ran out'),
    },
    counts: ['leaseLapse'],
  },
  // --- running: statuses and ends
  {
    name: 'a status that is not terminal is only noted',
    from: running({ status: 'IN_QUEUE' }),
    event: { kind: 'observed', status: 'IN_PROGRESS' },
    to: { phase: 'running', status: 'IN_PROGRESS' },
  },
  {
    name: 'COMPLETED ends the item, with its cost',
    from: running({ cost: 0.5 }),
    event: { kind: 'finished', status: 'COMPLETED', now: 9_000, cost: 0.25 },
    to: {
      phase: 'ended',
      outcome: 'completed',
      status: 'COMPLETED',
      cost: 0.75,
      jobId: 'job-1',
      endedAt: 9_000,
    },
  },
  {
    name: 'CANCELLED by someone else is never retried',
    from: running(),
    event: { kind: 'finished', status: 'CANCELLED', now: 9_000 },
    to: { phase: 'ended', outcome: 'cancelled', status: 'CANCELLED' },
  },
  {
    name: 'FAILED with retries left: a retry falls due after the backoff',
    from: running(),
    event: { kind: 'finished', status: 'FAILED', now: 9_000, error: 'boom' },
    to: { phase: 'retry-due', status: 'FAILED', finishedAt: 9_000, retryAt: 10_000 },
  },
  {
    name: 'the backoff doubles with each retry',
    from: running({ retries: 1 }),
    event: { kind: 'finished', status: 'TIMED_OUT', now: 9_000 },
    to: { phase: 'retry-due', status: 'TIMED_OUT', retryAt: 11_000 },
  },
  {
    name: 'retries fall due on the grid (the batch groups close failures into one /retry call)',
    from: running(),
    event: { kind: 'finished', status: 'FAILED', now: 9_300 },
    rules: { ...rules, retryGridMs: 1_000 },
    to: { phase: 'retry-due', retryAt: 11_000 },
  },
  {
    name: 'FAILED with no retry left: failed, with the error text',
    from: running({ retries: 2 }),
    event: { kind: 'finished', status: 'FAILED', now: 9_000, error: 'boom' },
    to: { phase: 'ended', outcome: 'failed', status: 'FAILED', reason: 'boom' },
  },
  {
    name: 'TIMED_OUT not in retry.on: timed out at once',
    from: running(),
    event: { kind: 'finished', status: 'TIMED_OUT', now: 9_000 },
    rules: { ...rules, retry: { ...rules.retry, on: ['FAILED'] } },
    to: { phase: 'ended', outcome: 'timedOut', status: 'TIMED_OUT' },
  },
  {
    name: 'a 404 before the ttl, seen alive lately: its ttl passed (the service clock ran ahead)',
    from: running(),
    event: { kind: 'gone', now: 50_000, lastAliveAt: 40_000, stopping: false },
    to: { phase: 'ended', outcome: 'expired', expired: 'ttl' },
    commands: [{ kind: 'cancel', jobId: 'job-1' }],
  },
  {
    name: 'a 404 minutes after the submit, with no word from the poller: the ttl (results expire 30 min after the end)',
    from: running({ aliveAt: 1_200 }),
    event: { kind: 'gone', now: 5 * 60_000, stopping: false },
    to: { phase: 'ended', outcome: 'expired', expired: 'ttl' },
    commands: [{ kind: 'cancel', jobId: 'job-1' }],
  },
  {
    name: 'a 404 long before the ttl, not seen for a retention period: results expired unseen',
    from: running(),
    event: { kind: 'gone', now: 40 * 60_000, stopping: false },
    to: { phase: 'ended', outcome: 'expired', expired: 'results' },
    commands: [{ kind: 'cancel', jobId: 'job-1' }],
  },
  {
    name: 'an expired job with onExpired resubmit: queued again',
    from: running(),
    event: { kind: 'gone', now: 40 * 60_000, stopping: false },
    rules: resubmitting,
    to: { phase: 'queued' },
    commands: [{ kind: 'cancel', jobId: 'job-1' }],
  },
  {
    name: 'an expired job is not resubmitted while the work stops',
    from: running(),
    event: { kind: 'gone', now: 40 * 60_000, stopping: true },
    rules: resubmitting,
    to: { phase: 'ended', outcome: 'expired' },
    commands: [{ kind: 'cancel', jobId: 'job-1' }],
  },
  {
    name: 'an expired job is not resubmitted past maxSubmissions',
    from: running({ submissions: 3 }),
    event: { kind: 'gone', now: 40 * 60_000, stopping: false },
    rules: resubmitting,
    to: { phase: 'ended', outcome: 'expired' },
    commands: [{ kind: 'cancel', jobId: 'job-1' }],
  },
  {
    name: 'the deadline came and the last look found nothing: expired, and cancelled all the same',
    from: running(),
    event: { kind: 'deadline', now: 90_000_000, stopping: false },
    to: { phase: 'ended', outcome: 'expired', reason: 'its ttl passed (the service answers 404)' },
    commands: [{ kind: 'cancel', jobId: 'job-1' }],
  },
  {
    name: 'the deadline came with the job unfinished: expired, and the job is cancelled',
    from: running(),
    event: { kind: 'deadline', now: 90_000_000, status: 'IN_PROGRESS', stopping: false },
    to: { phase: 'ended', outcome: 'expired', reason: 'its ttl deadline came while it was IN_PROGRESS' },
    commands: [{ kind: 'cancel', jobId: 'job-1' }],
  },
  {
    name: 'a ttl extended by the caller moves the deadline',
    from: running(),
    event: { kind: 'ttl-extended', ttlMs: 172_800_000 },
    to: { phase: 'running', ttlMs: 172_800_000 },
  },
  // --- retry-due
  {
    name: 'at its time, a retry still possible: /retry',
    from: retryDue(),
    event: { kind: 'retry-time', now: 11_000, stopping: false },
    to: { phase: 'retry-due' },
    commands: [{ kind: 'retry' }],
  },
  {
    name: 'at its time, results already deleted (30 min after the end): expired',
    from: retryDue(),
    event: { kind: 'retry-time', now: 10_000 + 30 * 60_000, stopping: false },
    to: {
      phase: 'ended',
      outcome: 'expired',
      expired: 'results',
      reason: 'its results expired during the retry backoff',
    },
  },
  {
    name: 'at its time, past the ttl (which /retry does not reset): expired',
    from: retryDue({ ttlMs: 10_000 }),
    event: { kind: 'retry-time', now: 11_000, stopping: false },
    to: { phase: 'ended', outcome: 'expired', expired: 'ttl' },
  },
  {
    name: '/retry answered: running again, one more retry and attempt',
    from: retryDue(),
    event: { kind: 'retried', status: 'IN_QUEUE', now: 11_500 },
    to: { phase: 'running', status: 'IN_QUEUE', retries: 1, attempts: 2, submissions: 1 },
    counts: ['retry'],
  },
  {
    name: '/retry answered 404: expired (results)',
    from: retryDue(),
    event: { kind: 'retry-gone', now: 11_000, stopping: false },
    to: { phase: 'ended', outcome: 'expired', expired: 'results' },
  },
  {
    name: '/retry failed for good: the item ends with its last status',
    from: retryDue({ status: 'TIMED_OUT' }),
    event: { kind: 'retry-failed', now: 11_000, error: 'Unavailable' },
    to: { phase: 'ended', outcome: 'timedOut', reason: 'its /retry failed: Unavailable' },
  },
  // --- late answers
  {
    name: 'a late status for an item queued again is ignored',
    from: queuedItem(7),
    event: { kind: 'finished', status: 'COMPLETED', now: 9_000 },
    to: { phase: 'queued' },
  },
];

describe('stepItem', () => {
  it.each(cases)('$name', ({ from, event, rules: caseRules, to, counts, commands }) => {
    const result = stepItem(from, event, caseRules ?? rules);
    expect(result.item).toMatchObject(withUndefined(to));
    for (const [key, value] of Object.entries(to))
      if (value === undefined) expect(result.item).not.toHaveProperty(key);
    expect(result.counts).toEqual(counts ?? []);
    expect(result.commands).toEqual(commands ?? []);
  });

  it('never changes the state it is given', () => {
    const from = running({ lease: { ttlMs: 60_000, answeredAt: 1_200 } });
    const copy = structuredClone(from);
    stepItem(from, { kind: 'finished', status: 'FAILED', now: 9_000 }, rules);
    stepItem(from, { kind: 'lease-extended' }, rules);
    expect(from).toEqual(copy);
  });

  it('follows one item from submit through a failure, a retry and a completion', () => {
    let item: ItemState = queuedItem(0);
    const counts: string[] = [];
    const events: ItemEvent[] = [
      {
        kind: 'rejected',
        rejection: { retryable: true, type: 'RateLimited', message: '429', retryAfterMs: 2_000 },
        now: 0,
      },
      submitted,
      { kind: 'observed', status: 'IN_PROGRESS' },
      { kind: 'finished', status: 'FAILED', now: 5_000, cost: 0.1 },
      { kind: 'retry-time', now: 6_000, stopping: false },
      { kind: 'retried', status: 'IN_QUEUE', now: 6_500 },
      { kind: 'finished', status: 'COMPLETED', now: 9_000, cost: 0.2 },
    ];
    for (const event of events) {
      const result = stepItem(item, event, rules);
      item = result.item;
      counts.push(...result.counts);
    }
    expect(item).toMatchObject({
      phase: 'ended',
      outcome: 'completed',
      attempts: 2,
      submissions: 1,
      retries: 1,
      cost: 0.3,
    });
    expect(counts).toEqual(['submission', 'retry']);
  });
});

describe('dueOf', () => {
  it('is when the driver must act without an event, and for what, per phase', () => {
    expect(dueOf({ ...queuedItem(1), notBefore: 5 })).toEqual({ at: 5, work: 'submit' });
    expect(dueOf(queuedItem(1))).toBeUndefined();
    expect(dueOf(uncertain({ waitUntil: 6 }))).toEqual({ at: 6, work: 'orphan-wait-end' });
    expect(dueOf(retryDue({ retryAt: 7 }))).toEqual({ at: 7, work: 'retry' });
    expect(dueOf(running())).toBeUndefined();
  });
});

/** toMatchObject cannot match "absent": those keys are checked apart. */
function withUndefined(to: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(to).filter(([, value]) => value !== undefined));
}
