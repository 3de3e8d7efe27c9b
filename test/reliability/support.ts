/**
 * Plumbing of the reliability suite: the production-shaped Temporal of global-setup.ts, the
 * emulator over HTTP, the webhook gateway and the worker as real processes of the built package
 * (dist/worker/gateway-main.js and dist/worker/main.js with the prebuilt workflow bundle,
 * configured through the environment, as docker-compose.yml and the Dockerfile deploy them), a
 * driver that keeps a fixed number of jobs in flight, the events the cases wait for, and the
 * tally every case prints.
 *
 * Every job runs on an endpoint of its own, so the emulator's submission counter of that endpoint
 * is that job's count of /run requests the service acted on: 1 for a job done right, 2 or more for
 * a job submitted twice. The checks read outcomes only (results, typed failures, those counters),
 * never how the workflow waits.
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { WorkflowFailedError } from '@temporalio/client';
import { inject } from 'vitest';
import { awaitJob, type JobFailure, type JobResult, jobFailureOf, startJob } from '../../client/jobs';
import type { JobWorkflowInput } from '../../contracts/job-input';
import type { ProdTemporalInstance } from '../../scripts/prod-temporal';
import {
  type ProcessStackOptions,
  type Stack,
  type StackOptions,
  startProcessStack,
  untilAnswered,
} from '../support/process-stack';

// The batch tally and the stack's plumbing live in test/support (the integration suite's kill and
// restart cases share them); re-exported here so that the cases import one module.
export {
  type BatchTally,
  batchItemOutput,
  reportBatch,
  tallyBatch,
} from '../support/batch-tally';
export {
  builtEntry,
  type ManagedProcess,
  type Outage,
  outage,
  type Stack,
  type StackOptions,
  until,
  untilAnswered,
} from '../support/process-stack';

/**
 * Jobs in flight at once: a load choice, not a limit (a waiting job holds no worker slot). On this
 * machine's 2 cores the worker and the server are the bottleneck well before 80.
 */
export const IN_FLIGHT = 80;

export const instance = (): ProdTemporalInstance => inject('prodTemporal');

/**
 * The stack on the production-shaped server of global-setup.ts, its gateway and workers run from
 * the built package (dist/, with the prebuilt workflow bundle).
 */
export async function startStack(
  options: StackOptions & Pick<ProcessStackOptions, 'workerVars' | 'ownDirs' | 'store'>,
): Promise<Stack> {
  const temporal = instance();
  return startProcessStack({
    ...options,
    temporal: { address: temporal.address, namespace: temporal.namespace },
    entries: 'built',
    dirPrefix: 'reliability',
  });
}

// ------------------------------------------------------------------------------------------------
// Jobs

export interface JobSpec {
  input: JobWorkflowInput;
  /** The output a correct run returns. */
  expected: unknown;
}

export interface Outcome {
  index: number;
  workflowId: string;
  endpointId: string;
  expected: unknown;
  result?: JobResult;
  failure?: JobFailure;
  /** Neither a result nor a typed failure before the deadline. */
  error?: string;
}

export interface JobRun {
  /** Jobs whose workflow start was asked for so far (the driver's side). */
  started(): number;
  /** Jobs with an outcome so far. */
  settled(): number;
  /** Resolves once `count` jobs have an outcome. */
  whenSettled(count: number, timeoutMs?: number): Promise<void>;
  done: Promise<Outcome[]>;
}

/**
 * Starts `count` jobs, at most `inFlight` at a time, each on an endpoint of its own, and collects
 * every outcome. Starts are idempotent (the workflow id is fixed before the first try), so a start
 * retried across a server restart is one job.
 */
export function runJobs(
  stack: Stack,
  options: {
    name: string;
    count: number;
    inFlight?: number;
    spec: (index: number, endpointId: string) => JobSpec;
    timeoutMs: number;
  },
): JobRun {
  const deadline = Date.now() + options.timeoutMs;
  const outcomes: Outcome[] = [];
  let started = 0;
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const settle = (outcome: Outcome) => {
    outcomes.push(outcome);
    for (const waiter of waiters.filter((w) => outcomes.length >= w.count)) waiter.resolve();
  };

  const one = async (index: number): Promise<void> => {
    started += 1;
    const endpointId = stack.endpoint();
    const { input, expected } = options.spec(index, endpointId);
    const workflowId = `${options.name}-${index}-${randomUUID()}`;
    const outcome: Outcome = { index, workflowId, endpointId, expected };
    try {
      const handle = await untilAnswered(
        () => startJob(stack.client, input, { workflowId, taskQueue: stack.taskQueue }),
        deadline,
      );
      outcome.result = await untilAnswered(() => awaitJob(stack.client, { job: handle }), deadline);
    } catch (error) {
      const failure = error instanceof WorkflowFailedError ? jobFailureOf(error) : undefined;
      if (failure) outcome.failure = failure;
      else outcome.error = error instanceof Error ? error.message : String(error);
    }
    settle(outcome);
  };

  const done = (async () => {
    let next = 0;
    const lane = async () => {
      while (next < options.count) await one(next++);
    };
    await Promise.all(Array.from({ length: Math.min(options.inFlight ?? IN_FLIGHT, options.count) }, lane));
    return outcomes.sort((a, b) => a.index - b.index);
  })();

  return {
    started: () => started,
    settled: () => outcomes.length,
    whenSettled(count, timeoutMs = options.timeoutMs) {
      if (outcomes.length >= count) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`only ${outcomes.length} of ${count} jobs settled within ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
    done,
  };
}

/** The scripted handler's input for job `index`: a short run whose output names the job. */
export function scriptedJob(
  index: number,
  endpointId: string,
  options: {
    sleepMs: number;
    /** Fail the first run (the workflow then calls /retry). */
    failOnce?: boolean;
    polling: { initialInterval: number; maxInterval: number; backoffCoefficient: number };
    /** How long an uncertain submit waits for its orphan's webhook (which the gateway turns into a signal). */
    uncertainSubmitWaitMs: number;
    /**
     * 'resubmit' after that wait: a job whose orphan did not report itself within a wait much
     * longer than its run and the webhook's retries was never created. 'fail' is the default.
     */
    onUncertainSubmit?: 'fail' | 'resubmit';
    /**
     * A submit whose answer never came (a worker killed mid-call) is uncertain after this long;
     * the library's default (2 minutes) when absent. Short only where a kill makes it matter: on
     * a loaded machine a live worker's submit can take seconds.
     */
    submitTimeoutMs?: number;
    /** Fresh submissions allowed in total; the library's default (3) when absent. */
    maxSubmissions?: number;
    /**
     * false: no submit lease. The emulator counts a lease in service time while the workflow's
     * timers run in real time, so at a time scale above 1 a 60 s lease lasts 6 s (at x10) and
     * lapses before its extension; the lease is tested at time scale 1 (test/integration/*-lease).
     */
    submitLease?: false | string;
  },
): JobSpec {
  const expected = { job: index, tag: `out-${index}` };
  return {
    expected,
    input: {
      endpointId,
      request: {
        input: { sleepMs: options.sleepMs, output: expected, ...(options.failOnce ? { failTimes: 1 } : {}) },
      },
      ...(options.failOnce ? { retry: { maxRetries: 2, initialInterval: 200 } } : {}),
      polling: options.polling,
      ...(options.submitTimeoutMs ? { submitTimeout: options.submitTimeoutMs } : {}),
      ...(options.maxSubmissions ? { maxSubmissions: options.maxSubmissions } : {}),
      uncertainSubmitWait: options.uncertainSubmitWaitMs,
      ...(options.onUncertainSubmit ? { onUncertainSubmit: options.onUncertainSubmit } : {}),
      ...(options.submitLease === undefined ? {} : { submitLease: options.submitLease }),
    },
  };
}

// ------------------------------------------------------------------------------------------------
// Figures

export interface Tally {
  jobs: number;
  /** The right output, from the one job of its request that ran on the service. */
  completed: number;
  /** A result with the wrong output or more than one job behind it. */
  wrong: number;
  /** Typed failures by type. */
  failures: Record<string, number>;
  /** Neither result nor typed failure within the deadline. */
  noOutcome: number;
  /** Requests of which two or more jobs started running on the service. */
  ranTwice: number;
  /**
   * Requests the service acted on more than once whose extra jobs never ran: an uncertain submit
   * or a lapsed lease, sent again after the service had deleted the first job at its lease.
   */
  sentAgain: number;
  /** Jobs not completed and not ending with one of the accepted failure types. */
  lost: number;
  /** Completed jobs that went through an uncertain submit (adopted from a webhook, or sent again). */
  recoveredUncertain: number;
}

/** The jobs of one request (each request has its own endpoint) that started running on the service. */
function ranJobs(stack: Stack, endpointId: string): string[] {
  return stack.control
    .jobs(endpointId, { removed: true })
    .filter((job) => job.startedAt !== undefined)
    .map((job) => job.id);
}

export function tally(stack: Stack, outcomes: Outcome[], accepted: string[] = []): Tally {
  const failures: Record<string, number> = {};
  let completed = 0;
  let wrong = 0;
  let noOutcome = 0;
  let ranTwice = 0;
  let sentAgain = 0;
  let acceptedFailures = 0;
  let recoveredUncertain = 0;
  for (const outcome of outcomes) {
    const ran = ranJobs(stack, outcome.endpointId);
    if (ran.length > 1) ranTwice += 1;
    else if (stack.control.submissions(outcome.endpointId) > 1) sentAgain += 1;
    if (outcome.result) {
      const right =
        isDeepStrictEqual(outcome.result.output, outcome.expected) &&
        ran.length === 1 &&
        ran[0] === outcome.result.jobId;
      if (right) completed += 1;
      else wrong += 1;
      if (right && outcome.result.uncertainSubmits > 0) recoveredUncertain += 1;
    } else if (outcome.failure) {
      failures[outcome.failure.type] = (failures[outcome.failure.type] ?? 0) + 1;
      if (accepted.includes(outcome.failure.type)) acceptedFailures += 1;
    } else {
      noOutcome += 1;
    }
  }
  return {
    jobs: outcomes.length,
    completed,
    wrong,
    failures,
    noOutcome,
    ranTwice,
    sentAgain,
    lost: outcomes.length - completed - acceptedFailures,
    recoveredUncertain,
  };
}

/** The one-line figure of a case, printed for the log and the README's table. */
export function report(name: string, figures: Tally, extra: string, startedAt: number): string {
  const failures = Object.entries(figures.failures)
    .map(([type, count]) => `${count} ${type}`)
    .join(', ');
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(0);
  const line =
    `RELIABILITY ${name}: ${figures.jobs} jobs, ${figures.lost} lost, ${figures.ranTwice} run twice, ` +
    `${seconds} s (${figures.completed} completed with the right output from the one job that ran` +
    (figures.sentAgain
      ? `; ${figures.sentAgain} sent again after a lease, the first job deleted unrun`
      : '') +
    (failures ? `; failures: ${failures}` : '') +
    (figures.recoveredUncertain
      ? `; ${figures.recoveredUncertain} completed after an uncertain submit`
      : '') +
    (figures.wrong ? `; ${figures.wrong} wrong results` : '') +
    (figures.noOutcome ? `; ${figures.noOutcome} without outcome` : '') +
    (extra ? `; ${extra}` : '') +
    ')';
  console.log(line);
  return line;
}

/** The outcomes that went wrong (the worst kinds first), for an assertion's message. */
export function examples(outcomes: Outcome[], stack: Stack, accepted: string[] = []): string {
  const rank = (o: Outcome): number => {
    const ran = ranJobs(stack, o.endpointId);
    if (ran.length > 1) return 0;
    if (o.result) return isDeepStrictEqual(o.result.output, o.expected) && ran[0] === o.result.jobId ? 9 : 1;
    if (o.error) return 2;
    return o.failure && accepted.includes(o.failure.type) ? 4 : 3;
  };
  return outcomes
    .filter((o) => rank(o) < 9)
    .sort((a, b) => rank(a) - rank(b))
    .slice(0, 5)
    .map((o) =>
      JSON.stringify({
        workflowId: o.workflowId,
        submissions: stack.control.submissions(o.endpointId),
        // Every job the service had for this request: whether it ran, how it ended, why it went.
        service: stack.control.jobs(o.endpointId, { removed: true }).map((job) => ({
          id: job.id,
          status: job.status,
          ran: job.startedAt !== undefined,
          removed: job.removedReason,
          ttl: job.policy.ttl,
        })),
        failure: o.failure && { type: o.failure.type, message: o.failure.message.slice(0, 400) },
        error: o.error,
        output: o.result?.output,
        jobIds: o.result?.jobIds,
        counts: o.result && {
          uncertainSubmits: o.result.uncertainSubmits,
          uncertainAdopted: o.result.uncertainAdopted,
          resubmittedAfterLease: o.result.resubmittedAfterLease,
          leaseLapses: o.result.leaseLapses,
        },
      }),
    )
    .join('\n');
}

// ------------------------------------------------------------------------------------------------
// Batches

/**
 * Seeded dice (mulberry32) for the emulator that also count what they decide. They assume every
 * faultable request meets `rulesPerRequest` matching rules of probability `perRule` each, matched
 * synchronously in turn (emulator/faults.ts): a request is a run of rolls ending at the first pass
 * (that rule's fault) or after one failed roll per rule (no fault). Rules of another operation or
 * endpoint are skipped without a roll.
 */
export function countingDice(seed: number, rulesPerRequest: number, perRule: number) {
  let state = seed >>> 0;
  const counts = { requests: 0, faulted: 0, byRule: Array.from({ length: rulesPerRequest }, () => 0) };
  let position = 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const random = () => {
    const value = next();
    if (value < perRule) {
      counts.requests += 1;
      counts.faulted += 1;
      counts.byRule[position] = (counts.byRule[position] ?? 0) + 1;
      position = 0;
    } else if (++position === rulesPerRequest) {
      counts.requests += 1;
      position = 0;
    }
    return value;
  };
  return { random, counts };
}
