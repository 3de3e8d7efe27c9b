/**
 * Workers on several machines, simulated honestly: three worker processes, each with a
 * RESULT_STORE_DIR of its own and no directory shared, one gateway process apart, on the real
 * server on PostgreSQL; the batch's manifest is in a bucket of a real S3-compatible server
 * (SeaweedFS) and its results land there. One worker is SIGKILLed mid-batch. Every item runs once
 * and completes with its own output, and the results are read back from the bucket by this
 * process, a fourth one that shares nothing with the workers but the bucket and Temporal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishedSummary } from '../../client/batches';
import { expectEveryItemCompletedOnce, startScriptedBatch } from '../support/batch-scenarios';
import {
  provisionedSeaweedfs,
  S3_SERVER_MISSING,
  type S3TestServer,
  startS3Server,
} from '../support/s3-server';
import {
  type ManagedProcess,
  reportBatch,
  type Stack,
  startStack,
  tallyBatch,
  until,
  untilAnswered,
} from './support';

const ITEMS = 2_000;
const WORKERS = 200;
const PROCESSES = 3;
/** The kill, as the share of the items the service has acted on. */
const KILL_AT = 0.4;
const BUCKET = 'machines';
const STORE = `s3://${BUCKET}/batches-shared`;
const missing = provisionedSeaweedfs() === undefined;
if (missing) console.warn(`batch-s3-machines.test.ts skipped: ${S3_SERVER_MISSING}`);

describe.skipIf(missing)(
  'reliability: three workers sharing only a bucket, one SIGKILLed (real server on PostgreSQL, real S3)',
  () => {
    let server: S3TestServer;
    let stack: Stack;
    beforeAll(async () => {
      server = await startS3Server('machines');
      await server.createBucket(BUCKET);
      const storeVars = {
        RESULT_STORE_URL: STORE,
        RESULT_STORE_ENDPOINT: server.endpoint,
        RESULT_STORE_PATH_STYLE: 'true',
      };
      // This process (the fourth) writes the manifest and reads the results as any client would.
      Object.assign(process.env, server.env, storeVars);
      stack = await startStack({
        name: 'batch-s3-machines',
        timeScale: 1,
        workerVars: { ...server.env, ...storeVars },
        ownDirs: true,
        store: STORE,
      });
    });
    afterAll(async () => {
      await stack?.close();
      await server?.close();
    });

    it(`${PROCESSES} workers with no shared directory run ${ITEMS} items from an S3 manifest to S3 results; a SIGKILL loses nothing`, async () => {
      const startedAt = Date.now();
      const workers: ManagedProcess[] = Array.from({ length: PROCESSES }, () => stack.startWorker());
      await Promise.all(workers.map((worker) => worker.running));
      const { endpointId, handle } = await startScriptedBatch(stack, {
        name: 'batch-s3-machines',
        items: ITEMS,
        workers: WORKERS,
        sleepMs: 500,
        manifestStore: STORE,
        // As in batch-scale-out: a page cut by the kill is noticed within submitTimeout, and an item
        // whose request never reported goes out again only after the lease.
        job: { submitLease: '60 seconds', submitTimeout: 15_000, maxSubmissions: 5 },
      });

      await until(
        `the service acted on ${ITEMS * KILL_AT} submissions`,
        () => stack.submissions() >= ITEMS * KILL_AT,
      );
      const killedAt = stack.submissions();
      const victim = workers[1] as ManagedProcess;
      await victim.kill();
      expect(victim.child.signalCode).toBe('SIGKILL');

      const summary = await untilAnswered(
        () => finishedSummary(stack.client, { batch: handle }),
        Date.now() + 600_000,
      );
      expect(summary.results.store).toBe(STORE);
      const figures = await tallyBatch(stack, endpointId, summary);
      reportBatch(
        'batch-s3-machines',
        figures,
        `${PROCESSES} worker processes with their own directories, manifest and results in ${STORE}, one SIGKILLed at ` +
          `${killedAt} submissions; ${summary.submissions} submissions by the batch, ${summary.uncertainSubmits} uncertain submits`,
        startedAt,
      );
      expect(killedAt).toBeLessThan(ITEMS);
      expectEveryItemCompletedOnce(figures, summary, ITEMS);
    }, 900_000);
  },
);
