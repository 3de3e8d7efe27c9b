/**
 * A worker process SIGKILLed while 200 jobs wait on it: a new worker process finishes them all,
 * each job submitted exactly once. Between two looks the waits live on the Temporal server (as
 * activity retry timers), so the new worker simply picks up the next attempts. Polling only: the
 * worker processes hand out no webhook URLs, so every job ends by a look at /status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitJob, type JobHandle } from '../../client/jobs';
import {
  HOUR_MS,
  hourLongJob,
  inBatches,
  type JobStack,
  jobsInProgress,
  seenRunning,
  spawnWorker,
  startJobStack,
} from '../support/integration';
import { uniqueTaskQueue } from '../support/temporal';

const JOBS = 200;
// A job ends at its next look after the clock moves (at most 10 s later); looks more often than that
// would only load the machine, and the files running beside this one, with activity tasks.
const POLLING = { initialInterval: 5_000, maxInterval: 10_000, backoffCoefficient: 1.5 };

describe('a worker killed while 200 jobs wait (dev server, emulator over HTTP, worker processes)', () => {
  let stack: JobStack;
  beforeAll(async () => {
    stack = await startJobStack({ name: 'many-crash', timeScale: 1, worker: false });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('a new worker finishes them all, each submitted once', async () => {
    const taskQueue = uniqueTaskQueue('many-crash');
    const { TEMPORAL_ADDRESS: _address, WORKER_SHUTDOWN_GRACE_MS: _grace, ...service } = stack.workerEnv;
    const vars = { ...service, TEMPORAL_TASK_QUEUE: taskQueue };
    const endpointId = stack.endpoint({ workersMin: 0, workersMax: JOBS });
    const first = spawnWorker(vars);
    const workers = [first];
    try {
      await first.running;
      const handles: JobHandle[] = await inBatches(JOBS, 50, (index) =>
        stack.start(hourLongJob(endpointId, index, POLLING), { taskQueue, label: `wait-${index}` }),
      );
      // All 200 running, and each workflow waiting on its job (not still submitting).
      await jobsInProgress(stack.control, endpointId, JOBS, {
        workflows: { client: stack.client, ids: handles.map((handle) => handle.workflowId) },
      });
      await inBatches(JOBS, 25, (index) =>
        stack.snapshotWhen((handles[index] as JobHandle).workflowId, seenRunning),
      );

      await first.kill();
      expect(first.child.signalCode).toBe('SIGKILL');

      const second = spawnWorker(vars);
      workers.push(second);
      await second.running;
      stack.control.advance(HOUR_MS);

      const results = await Promise.all(handles.map((handle) => awaitJob(stack.client, { job: handle })));
      results.forEach((result, index) => {
        expect(result.output).toEqual({ index });
        // Sent again only after an uncertain submit (whose request never reached the service: the
        // service's count below is one per job).
        expect(result.submissions - 1).toBe(result.uncertainSubmits);
      });
      expect(stack.control.submissions(endpointId)).toBe(JOBS);
      expect(new Set(results.map((result) => result.jobId)).size).toBe(JOBS);
    } finally {
      for (const worker of workers) await worker.kill();
    }
  }, 1_200_000);
});
