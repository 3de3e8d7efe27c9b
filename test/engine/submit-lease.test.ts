import { describe, expect, it } from 'vitest';
import { parseJobWorkflowInput } from '../../contracts/job-input';
import {
  DEFAULT_LEASE_MS,
  extensionRetryPauseMs,
  extensionTtl,
  LEASE_END_MARGIN_MS,
  LEASE_MIN_MS,
  leaseApplies,
  leaseEndsBy,
  leaseRequest,
  leaseTtl,
  lookExtensionDueAt,
  looksExtendLease,
  orphanWaitUntil,
  WEBHOOK_MARGIN_MS,
  WEBHOOK_RETRY_WINDOW_MS,
} from '../../contracts/submit-lease';

const DAY = 86_400_000;

describe('submit lease rules (pure)', () => {
  it('ttl = min(lease, caller ttl), never below the 10 s minimum', () => {
    expect(leaseTtl(60_000, DAY)).toBe(60_000);
    expect(leaseTtl(60_000, 30_000)).toBe(30_000);
    expect(leaseTtl(5_000, DAY)).toBe(LEASE_MIN_MS);
    expect(leaseTtl(60_000, 10_000)).toBe(10_000);
  });

  it("'auto' asks for the default lease, only with a webhook; a duration asks for it always", () => {
    expect(leaseRequest('auto', 'async', DAY)).toEqual({ ttlMs: DEFAULT_LEASE_MS, onlyWithWebhook: true });
    expect(leaseRequest(20_000, 'sync', DAY)).toEqual({ ttlMs: 20_000, onlyWithWebhook: false });
    expect(leaseRequest(120_000, 'async', 45_000)).toEqual({ ttlMs: 45_000, onlyWithWebhook: false });
  });

  it('off, or mode runsync: no lease', () => {
    expect(leaseRequest(false, 'async', DAY)).toBeUndefined();
    expect(leaseRequest('auto', 'runsync', DAY)).toBeUndefined();
    expect(leaseRequest(30_000, 'runsync', DAY)).toBeUndefined();
  });

  it('whether the lease applies depends on the webhook only for auto', () => {
    const auto = leaseRequest('auto', 'async', DAY);
    const explicit = leaseRequest(30_000, 'async', DAY);
    expect(leaseApplies(auto, true)).toBe(true);
    expect(leaseApplies(auto, false)).toBe(false);
    expect(leaseApplies(explicit, false)).toBe(true);
    expect(leaseApplies(undefined, true)).toBe(false);
  });

  it("the extension asks for the caller's ttl (the service counts it from submission), if longer", () => {
    expect(extensionTtl(60_000, DAY)).toBe(DAY);
    expect(extensionTtl(30_000, 30_000)).toBeUndefined();
    expect(leaseEndsBy(1_000, 60_000)).toBe(61_000 + LEASE_END_MARGIN_MS);
  });

  it("an extension's tries keep coming until the lease ends: a dozen inside the spec's 10 s minimum", () => {
    // Doubling from 1 s while there is room, a quarter of what is left near the end, 250 ms at least.
    expect(extensionRetryPauseMs(0, 60_000)).toBe(1_000);
    expect(extensionRetryPauseMs(3, 60_000)).toBe(8_000);
    expect(extensionRetryPauseMs(6, 60_000)).toBe(10_000);
    expect(extensionRetryPauseMs(3, 6_000)).toBe(1_500);
    expect(extensionRetryPauseMs(5, 400)).toBe(250);
    // Tries made inside a 10 s lease (plus its 1 s margin) when every one fails at once.
    const until = leaseEndsBy(0, LEASE_MIN_MS);
    let now = 0;
    let tries = 1;
    for (let pause = extensionRetryPauseMs(0, until); now + pause < until; tries++) {
      now += pause;
      pause = extensionRetryPauseMs(tries, until - now);
    }
    expect(tries).toBeGreaterThanOrEqual(10);
    // A doubling pause alone (1, 2, 4, 8 s) gave 4.
  });

  it('an orphan is waited for: lease + webhook retry window (+ margin); without webhooks the lease only', () => {
    expect(WEBHOOK_RETRY_WINDOW_MS).toBe(20_000);
    expect(orphanWaitUntil(1_000, 60_000, true)).toBe(1_000 + 60_000 + 20_000 + WEBHOOK_MARGIN_MS);
    expect(orphanWaitUntil(1_000, 60_000, false)).toBe(1_000 + 60_000 + WEBHOOK_MARGIN_MS);
  });
});

describe('submitLease input', () => {
  const base = { endpointId: 'ep-1', request: { input: {} } };
  const parse = (extra: Record<string, unknown>) => parseJobWorkflowInput({ ...base, ...extra });

  it("defaults to 'auto'; takes false and durations", () => {
    const parsed = parse({});
    expect(parsed.ok && parsed.value.options.submitLease).toBe('auto');
    const off = parse({ submitLease: false });
    expect(off.ok && off.value.options.submitLease).toBe(false);
    const lease = parse({ submitLease: '30 seconds' });
    expect(lease.ok && lease.value.options.submitLease).toBe(30_000);
  });

  it('refuses a lease under 10 s, anything else, and a lease in mode runsync, naming the field', () => {
    expect(parse({ submitLease: '5 seconds' })).toEqual({
      ok: false,
      field: 'submitLease',
      rule: "must be at least 10 seconds (the service's minimum ttl)",
    });
    expect(parse({ submitLease: true })).toMatchObject({ ok: false, field: 'submitLease' });
    expect(parse({ submitLease: 'soon' })).toMatchObject({ ok: false, field: 'submitLease' });
    expect(parse({ mode: 'runsync', submitLease: 20_000 })).toMatchObject({
      ok: false,
      field: 'submitLease',
      rule: expect.stringContaining('modes async and sync'),
    });
    expect(parse({ mode: 'runsync' }).ok).toBe(true);
  });

  it('a lease above the request ttl is fine (the request ttl is used)', () => {
    const parsed = parse({ request: { input: {}, policy: { ttl: 15_000 } }, submitLease: '2 minutes' });
    expect(parsed.ok).toBe(true);
    if (parsed.ok)
      expect(leaseRequest(parsed.value.options.submitLease, 'async', parsed.value.ttlMs)?.ttlMs).toBe(15_000);
  });

  it("leaves a batch's long lease to its watcher's looks, due a quarter into it; a short one to the submit", () => {
    expect(looksExtendLease(DEFAULT_LEASE_MS)).toBe(true);
    expect(looksExtendLease(59_999)).toBe(false);
    expect(lookExtensionDueAt(1_000, 60_000)).toBe(16_000);
  });
});
