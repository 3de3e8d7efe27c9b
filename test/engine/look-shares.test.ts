import { describe, expect, it } from 'vitest';
import { lookShare } from '../../workflows/look-shares';

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
