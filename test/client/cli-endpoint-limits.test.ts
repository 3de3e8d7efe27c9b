/**
 * The flags of `endpoint limits` and of the scheduling options (`--priority`, `--fairness-key`,
 * `--fairness-weight`), read into the library's shapes; a bad flag is refused naming it, before
 * anything is contacted.
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import { limitsControls } from '../../client/cli-endpoint-limits';
import { schedulingOf } from '../../client/cli-scheduling';

describe('endpoint limits flags', () => {
  it.each([
    [{}, undefined],
    [{ pause: true }, { paused: true }],
    [
      { resume: true, clearRunLimit: true },
      { paused: false, runLimit: null },
    ],
    [{ runLimit: '500' }, { runLimit: 500 }],
    [
      { weight: ['tenant-a=3', 'team=b=0.5'], clearWeight: ['tenant-c'] },
      { weights: { 'tenant-a': 3, 'team=b': 0.5, 'tenant-c': null } },
    ],
  ])('%j asks for %j', (flags, controls) => {
    expect(limitsControls(flags)).toEqual(controls);
  });

  it.each([
    [{ pause: true, resume: true }, '--pause'],
    [{ runLimit: '500', clearRunLimit: true }, '--run-limit'],
    [{ runLimit: '0' }, '--run-limit'],
    [{ runLimit: '2.5' }, '--run-limit'],
    [{ weight: ['tenant-a'] }, '--weight'],
    [{ weight: ['tenant-a=0'] }, '--weight'],
  ])('refuses %j naming %s', (flags, field) => {
    expect(() => limitsControls(flags)).toThrow(ValidationError);
    expect(() => limitsControls(flags)).toThrow(field);
  });
});

describe('scheduling flags', () => {
  it('reads priority, fairness key and weight', () => {
    expect(schedulingOf({})).toEqual({});
    expect(schedulingOf({ priority: '1', fairnessKey: 'tenant-a', fairnessWeight: '2.5' })).toEqual({
      priority: 1,
      fairnessKey: 'tenant-a',
      fairnessWeight: 2.5,
    });
  });

  it.each([
    [{ priority: '0' }, '--priority'],
    [{ priority: '6' }, '--priority'],
    [{ priority: 'high' }, '--priority'],
    [{ fairnessKey: 'x'.repeat(65) }, '--fairness-key'],
    [{ fairnessWeight: '0' }, '--fairness-weight'],
  ])('refuses %j naming %s', (flags, field) => {
    expect(() => schedulingOf(flags)).toThrow(new RegExp(`^${field}`));
  });
});
