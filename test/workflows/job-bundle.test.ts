/**
 * The job workflow imports zod schemas from api/ and contracts/: this guards that nothing
 * with I/O (undici, node:fs, the API client) ever rides along into the workflow bundle.
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';

describe('job workflow bundle', () => {
  it('bundles without undici, the API client or node built-ins', async () => {
    const { code } = await bundleWorkflowCode({
      workflowsPath: require.resolve('../../workflows/job/job.ts'),
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
    });
    expect(code).toContain('serverlessJob');
    for (const forbidden of [
      'undici',
      'api/http.ts',
      'api/client.ts',
      'activities/job.ts',
      'result-store.ts',
      'node:fs',
    ]) {
      expect(code, forbidden).not.toContain(forbidden);
    }
  });
});
