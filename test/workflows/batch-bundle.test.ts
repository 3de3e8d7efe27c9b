/** The batch workflow's bundle carries no I/O: no undici, API client, activity code or node built-ins. */
import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';

describe('batch workflow bundle', () => {
  it('bundles without undici, the API client, the batch store or node built-ins', async () => {
    const { code } = await bundleWorkflowCode({
      workflowsPath: require.resolve('../../workflows/batch/batch.ts'),
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
    });
    expect(code).toContain('serverlessBatch');
    for (const forbidden of [
      'undici',
      'api/http.ts',
      'api/client.ts',
      'activities/batch.ts',
      'activities/batch-shared.ts',
      'activities/batch-submit-page.ts',
      'activities/batch-watch-jobs.ts',
      'batch-store.ts',
      'result-store.ts',
      'node:fs',
    ]) {
      expect(code, forbidden).not.toContain(forbidden);
    }
  });
});
