/** Bad batch input is refused before anything starts, naming the field and the rule. */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../api/errors';
import { validateBatchInput } from '../../client/batches';
import type { BatchInput } from '../../contracts/batch-input';

function refusal(input: unknown): { field: string; rule: string } | undefined {
  try {
    validateBatchInput(input as BatchInput);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    const { field, rule } = error as ValidationError;
    return { field, rule };
  }
}

const ok: BatchInput = { endpointId: 'ep-1', items: { inline: [{ input: { n: 1 } }] } };

describe('batch input', () => {
  it('accepts inline items and a manifest key, with the job defaults', () => {
    expect(refusal(ok)).toBeUndefined();
    expect(
      refusal({ endpointId: 'ep-1', items: { manifest: { key: 'runs/2026/items.jsonl' } } }),
    ).toBeUndefined();
  });

  it('names the field and the rule', () => {
    expect(refusal({ ...ok, maxConcurrency: 0 })).toMatchObject({ field: 'maxConcurrency' });
    expect(refusal({ ...ok, failureTolerance: { percentage: 120 } })).toMatchObject({
      field: 'failureTolerance.percentage',
    });
    expect(refusal({ ...ok, items: { inline: [] } })).toMatchObject({
      field: 'items.inline',
      rule: 'must hold at least one item',
    });
    expect(refusal({ ...ok, items: { manifest: { key: '../etc/passwd' } } })).toMatchObject({
      field: 'items.manifest.key',
      rule: expect.stringContaining('relative path'),
    });
    expect(refusal({ ...ok, items: { somewhere: 'else' } })).toMatchObject({
      field: 'items',
      rule: expect.stringContaining('manifest'),
    });
    expect(refusal({ ...ok, job: { retry: { maxRetries: -1 } } })).toMatchObject({
      field: 'job.retry.maxRetries',
    });
    expect(refusal({ ...ok, job: { onExpired: 'sometimes' } })).toMatchObject({ field: 'job.onExpired' });
    expect(
      refusal({ ...ok, job: { polling: { initialInterval: 5_000, maxInterval: 1_000 } } }),
    ).toMatchObject({ field: 'job.polling.maxInterval' });
    expect(refusal({ ...ok, surprise: true })).toMatchObject({ rule: expect.stringContaining('surprise') });
  });

  it('checks every inline request, webhook and ttl included', () => {
    expect(
      refusal({ ...ok, items: { inline: [{ input: {} }, { input: {}, policy: { ttl: 5 } }] } }),
    ).toMatchObject({
      field: 'items.inline.1.policy.ttl',
    });
    expect(refusal({ ...ok, items: { inline: [{ input: {}, webhook: 'https://x' }] } })).toBeDefined();
  });

  it('refuses an inline list too large for a Temporal payload, pointing at manifests', () => {
    const big = Array.from({ length: 40 }, () => ({ input: { blob: 'x'.repeat(50_000) } }));
    expect(refusal({ ...ok, items: { inline: big } })).toMatchObject({
      field: 'items.inline',
      rule: expect.stringContaining('manifest'),
    });
  });
});
