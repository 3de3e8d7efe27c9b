/**
 * What an operator sees of a running batch from a terminal, with the Temporal CLI itself (the one
 * `npm run provision` builds) against the integration tier's shared dev server: `temporal workflow
 * describe` shows the batch's summary and details, and `temporal workflow metadata` (the query the
 * UI sends for them) its current details. The emulator's clock is frozen while the CLI reads, so the
 * counts stand still; the test waits on the batch's own query, never on time.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getBatchProgress, startBatch } from '../../client/batches';
import { describeBatch } from '../../client/workflow-descriptions';
import type { BatchInput } from '../../contracts/batch-input';
import { provisionedServers } from '../../scripts/servers';
import { eventually, type JobStack, startJobStack } from '../support/integration';
import { currentDetails } from '../support/workflow-metadata';

const run = promisify(execFile);
const SHORT_MS = 1_000;
const LONG_MS = 60 * 60_000;

describe('a running batch through the Temporal CLI', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'cli-describe', timeScale: 1 });
  });
  afterAll(async () => {
    await stack?.close();
  });

  /** `temporal workflow <command> --workflow-id <id>` on the shared dev server; its stdout. */
  async function temporal(command: string, workflowId: string, ...flags: string[]): Promise<string> {
    const { temporalCli } = provisionedServers();
    if (!temporalCli) throw new Error('no Temporal CLI is provisioned: run npm run provision');
    const { stdout } = await run(temporalCli, [
      'workflow',
      command,
      '--workflow-id',
      workflowId,
      '--address',
      inject('temporalAddress'),
      ...flags,
    ]);
    return stdout;
  }

  it('describe shows its summary and details, metadata its current counts', async () => {
    const endpointId = stack.endpoint({ workersMax: 10 });
    const input: BatchInput = {
      endpointId,
      items: {
        inline: [...Array(4).fill(SHORT_MS), ...Array(6).fill(LONG_MS)].map((sleepMs) => ({
          input: { sleepMs },
        })),
      },
      maxConcurrency: 10,
    };
    const handle = await startBatch(stack.client, input, {
      workflowId: `demo-batch-${Date.now()}`,
      taskQueue: stack.taskQueue,
    });
    // The short items finish; then the service's clock stops and the long ones stay in flight.
    await eventually(async () => {
      const progress = await getBatchProgress(stack.client, { batch: handle }).catch(() => undefined);
      return progress?.counts.completed === 4 && progress.inFlight === 6 ? progress : undefined;
    }, 60_000);
    stack.control.freeze();
    // The batch sets its current details on the loop turn after it counted: wait for that turn.
    await eventually(async () => (await currentDetails(handle)).includes('| Completed | 4 |'), 60_000);

    const expected = describeBatch(input);
    const described = JSON.parse(await temporal('describe', handle.workflowId, '--output', 'json')) as {
      executionConfig?: { userMetadata?: { summary?: unknown; details?: unknown } };
    };
    const metadata = JSON.stringify(described.executionConfig?.userMetadata);
    expect(metadata).toContain(JSON.stringify(expected.staticSummary).slice(1, -1));
    expect(metadata).toContain('**Serverless batch**');
    expect(metadata).toContain(`| Endpoint | \`${endpointId}\` |`);
    expect(await temporal('describe', handle.workflowId)).toContain(expected.staticSummary);

    const current = await temporal('metadata', handle.workflowId);
    expect(current).toContain('Current Details:');
    expect(current).toContain('**4 of 10 items done**');
    expect(current).toMatch(/\| Completed \| 4 \|/);
    expect(current).toMatch(/\| In flight \| 6 \|/);
    expect(current).toMatch(/\| State \| running \|/);
    await handle.cancel();
  });
});
