import { describe, expect, it } from 'vitest';
import type { LookLog } from '../../contracts/look-log';
import { lookShare, looksHandedBack, looksOfCancelled, looksTakenOver } from '../../engine/look-shares';

const SPEC = {
  status: { perTenSeconds: 2000, concurrent: 400 },
  run: { perTenSeconds: 1000, concurrent: 200 },
};

describe('lookShare', () => {
  it('gives a watcher the part of the /status limit its jobs are of the batch window', () => {
    expect(lookShare({ ...SPEC, leased: false }, 100, 400)).toEqual({ perTenSeconds: 500, concurrent: 100 });
    expect(lookShare({ ...SPEC, leased: false }, 400, 400)).toEqual({ perTenSeconds: 2000, concurrent: 400 });
  });

  it('keeps the watchers of a full window within the limit together', () => {
    const watchers = [150, 100, 100, 37, 13];
    const shares = watchers.map((jobs) => lookShare({ ...SPEC, leased: false }, jobs, 400));
    expect(shares.reduce((sum, share) => sum + (share?.perTenSeconds ?? 0), 0)).toBeLessThanOrEqual(2000);
    expect(shares.reduce((sum, share) => sum + (share?.concurrent ?? 0), 0)).toBeLessThanOrEqual(400);
  });

  it('leaves the /run limit worth of looks to the submits extending leases', () => {
    expect(lookShare({ ...SPEC, leased: true }, 400, 400)).toEqual({ perTenSeconds: 1000, concurrent: 200 });
  });

  it('gives at least one look per window, and none without a /status rate', () => {
    expect(lookShare({ ...SPEC, leased: false }, 1, 100_000)).toEqual({ perTenSeconds: 1, concurrent: 1 });
    expect(lookShare({ status: undefined, run: undefined, leased: false }, 10, 100)).toBeUndefined();
    expect(
      lookShare({ status: { concurrent: 400 }, run: undefined, leased: false }, 10, 100),
    ).toBeUndefined();
  });
});

describe('looksOfCancelled', () => {
  const NOW = Date.UTC(2026, 0, 1, 12, 0, 0, 400);
  const second = Math.floor(NOW / 1_000);
  const share = { perTenSeconds: 50, concurrent: 10 };

  it('counts a cancelled watcher’s whole share as looked now, for the watchers after it', () => {
    const pool: { lookLog?: LookLog } = {};
    looksOfCancelled(pool, share, NOW);
    expect(pool.lookLog).toEqual([[second, 50, 'cancelled']]);
    // The next watcher takes as much as its share; the rest stays for the others.
    expect(looksTakenOver(pool, { perTenSeconds: 30, concurrent: 6 }, NOW + 1_000).seed).toEqual([
      [second, 30, 'cancelled'],
    ]);
    // Once the window is over, nothing of it counts.
    expect(looksTakenOver(pool, share, NOW + 11_000).seed).toEqual([]);
  });

  it('names the batch’s one client when only it looked lately (its limiter counts them), else none', () => {
    const alone = {};
    looksHandedBack(alone, [[second - 1, 5, 'worker-a']], NOW);
    looksOfCancelled(alone, share, NOW);
    expect(looksTakenOver(alone, share, NOW).seed).toContainEqual([second, 50, 'worker-a']);

    const two = {};
    looksHandedBack(two, [[second - 1, 5, 'worker-a']], NOW);
    looksHandedBack(two, [[second - 1, 5, 'worker-b']], NOW);
    looksOfCancelled(two, share, NOW);
    expect(looksTakenOver(two, share, NOW).seed).toContainEqual([second, 50, 'cancelled']);
  });

  it('adds nothing for a watcher without a share (no /status limit)', () => {
    const pool: { lookLog?: LookLog } = {};
    looksOfCancelled(pool, undefined, NOW);
    expect(pool.lookLog).toBeUndefined();
  });
});
