/**
 * The static summary and details each workflow starts with, as the Temporal UI shows them: what a
 * user needs to recognise the run (endpoint, size, policies), rendered from the checked input.
 */
import { describe, expect, it } from 'vitest';
import {
  describeAutomation,
  describeBatch,
  describeEndpointStep,
  describeJob,
} from '../../client/workflow-descriptions';
import { formatCount, formatDuration, markdownTable } from '../../contracts/progress-markdown';

describe('workflow descriptions', () => {
  it('a job names its endpoint, input size, ttl and retry policy', () => {
    const { staticSummary, staticDetails } = describeJob({
      endpointId: 'sdxl',
      request: { input: { prompt: 'x'.repeat(2_000) }, policy: { ttl: 3_600_000 } },
      retry: { maxRetries: 2, initialInterval: '5s' },
    });
    expect(staticSummary).toBe('Job on endpoint sdxl (async, input 2 KiB)');
    expect(staticDetails).toContain('| Endpoint | `sdxl` |');
    expect(staticDetails).toContain('| Input | 2 KiB |');
    expect(staticDetails).toContain('| ttl | 1 h |');
    expect(staticDetails).toContain(
      '| Retry | up to 2 times on FAILED, TIMED_OUT, first after 5 s, backoff ×2 |',
    );
  });

  it("a job without a ttl shows the service's default and no retry", () => {
    const { staticDetails } = describeJob({ endpointId: 'e1', request: { input: {} } });
    expect(staticDetails).toContain('| ttl | 1 d |');
    expect(staticDetails).toContain('| Retry | none (a FAILED or TIMED_OUT run ends the job) |');
  });

  it('a batch names its item source and count, endpoint, concurrency, tolerance and budget', () => {
    const items = Array.from({ length: 2_500 }, () => ({ input: {} }));
    const { staticSummary, staticDetails } = describeBatch({
      endpointId: 'whisper',
      items: { inline: items },
      maxConcurrency: 400,
      failureTolerance: { percentage: 5 },
      budget: 12.5,
    });
    expect(staticSummary).toBe('Batch of 2,500 items on endpoint whisper, 400 at once');
    expect(staticDetails).toContain('| Items | 2,500 inline items |');
    expect(staticDetails).toContain('| Concurrency | 400 jobs in flight (changeable while running) |');
    expect(staticDetails).toContain('| Failure tolerance | at most 5% of items |');
    expect(staticDetails).toContain('| Budget | 12.50 |');
  });

  it('a manifest batch names its manifest, and no tolerance or budget says so', () => {
    const { staticSummary, staticDetails } = describeBatch({
      endpointId: 'e',
      items: { manifest: { key: 'runs/a' } },
    });
    expect(staticSummary).toBe('Batch of items of a manifest on endpoint e, 100 at once');
    expect(staticDetails).toContain('| Items | manifest `runs/a` (counted at start) |');
    expect(staticDetails).toContain('| Failure tolerance | none: the first failed item fails the batch |');
    expect(staticDetails).toContain('| Budget | none |');
  });

  it('an automation names itself and its key', () => {
    const { staticSummary, staticDetails } = describeAutomation('resize', 'user-7');
    expect(staticSummary).toBe('Automation resize for key user-7');
    expect(staticDetails).toContain('| Key | `user-7` |');
  });

  it('an endpoint step names the endpoint and the step', () => {
    expect(describeEndpointStep({ step: 'teardown', input: { endpointId: 'ep1' } }).staticSummary).toBe(
      'Tear down endpoint ep1',
    );
    const update = describeEndpointStep({
      step: 'update',
      input: { endpointId: 'ep1', changes: { workersMax: 3 } },
    });
    expect(update.staticSummary).toBe('Update endpoint ep1');
    expect(update.staticDetails).toContain('| Changes | workersMax |');
  });

  it('refuses to describe an input the workflow would refuse', () => {
    expect(() => describeJob({ endpointId: 'e' } as never)).toThrow(/valid input/);
  });
});

describe('progress markdown', () => {
  it('formats counts and durations for people', () => {
    expect(formatCount(1_234_567)).toBe('1,234,567');
    expect(formatCount(12)).toBe('12');
    expect(formatDuration(250)).toBe('250 ms');
    expect(formatDuration(10_000)).toBe('10 s');
    expect(formatDuration(90_000)).toBe('1.5 min');
  });

  it('keeps a table whole: pipes escaped, undefined rows left out', () => {
    expect(
      markdownTable([
        ['a|b', 'c'],
        ['gone', undefined],
      ]),
    ).toBe('|  |  |\n| --- | --- |\n| a\\|b | c |');
  });
});
