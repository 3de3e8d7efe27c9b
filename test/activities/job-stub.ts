/**
 * A stub of the API client's `jobs` member for the activity tests: each operation answers from a
 * queue of scripted answers (a value, or an error to throw) and records its arguments.
 */
import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { ServiceClient } from '../../api/client';
import { ServiceError, type ServiceErrorInit } from '../../api/errors';

type Jobs = ServiceClient['jobs'];
type Operation = keyof Jobs;
type Answer = unknown | Error;

export interface StubClient {
  client: Pick<ServiceClient, 'jobs'>;
  calls: Array<{ operation: Operation; args: unknown[] }>;
  /** Queues answers for an operation; the last one repeats. */
  answer(operation: Operation, ...answers: Answer[]): void;
  named(operation: Operation): unknown[][];
}

export function stubClient(): StubClient {
  const queues = new Map<Operation, Answer[]>();
  const calls: StubClient['calls'] = [];
  const handler =
    (operation: Operation) =>
    async (...args: unknown[]) => {
      // As the client does: a try goes out only once its `beforeSend` resolved (api/http.ts).
      const options = args[2] as { beforeSend?: () => Promise<void> } | undefined;
      if (options?.beforeSend) {
        try {
          await options.beforeSend();
        } catch (error) {
          throw serviceError({
            kind: 'Aborted',
            operation,
            message: `${operation} not sent: ${(error as Error).message}`,
            retryable: true,
            mayHaveReachedService: false,
          });
        }
      }
      const { beforeSend: _hook, ...rest } = options ?? {};
      calls.push({
        operation,
        args:
          options === undefined || args.length < 3
            ? args
            : [args[0], args[1], ...(Object.keys(rest).length ? [rest] : [])],
      });
      const queue = queues.get(operation) ?? [];
      const answer = queue.length > 1 ? queue.shift() : queue[0];
      if (answer === undefined) throw new Error(`no answer scripted for ${operation}`);
      if (answer instanceof Error) throw answer;
      return answer;
    };
  const operations: Operation[] = [
    'run',
    'runSync',
    'status',
    'stream',
    'cancel',
    'retry',
    'purgeQueue',
    'health',
  ];
  const jobs = Object.fromEntries(
    operations.map((operation) => [operation, handler(operation)]),
  ) as unknown as Jobs;
  return {
    client: { jobs },
    calls,
    answer(operation, ...answers) {
      queues.set(operation, answers);
    },
    named: (operation) => calls.filter((call) => call.operation === operation).map((call) => call.args),
  };
}

export function serviceError(init: Partial<ServiceErrorInit> & Pick<ServiceErrorInit, 'kind'>): ServiceError {
  return new ServiceError({
    operation: 'status',
    message: `${init.kind} happened`,
    retryable: false,
    ...init,
  });
}

const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/**
 * The part of a Temporal client a submit uses: its heartbeats (activities/submit-beat.ts),
 * recorded in `beats`, or after the first `accepted` (an attempt that ended) refused with `refuse`,
 * or never answered (`'unanswered'`: the call fails at its deadline, as a gRPC call does).
 */
export function beatRecorder(
  refuse?: Error | 'unanswered',
  accepted = 0,
): { client: Client; beats: unknown[] } {
  const beats: unknown[] = [];
  const activity = {
    async heartbeat(_taskToken: Uint8Array, details: unknown) {
      if (refuse === 'unanswered' && beats.length >= accepted) return new Promise<never>(() => {});
      if (refuse && beats.length >= accepted) throw refuse;
      beats.push(details);
    },
  };
  // The worker binds its client's calls to the activity's abort signal through withAbortSignal.
  const withAbortSignal = <R>(_signal: AbortSignal, fn: () => R): R => fn();
  const withDeadline = <R>(deadline: number, fn: () => Promise<R>): Promise<R> =>
    new Promise<R>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded')),
        Math.max(deadline - Date.now(), 0),
      );
      fn()
        .then(resolve, reject)
        .finally(() => clearTimeout(timer));
    });
  return { client: { activity, withAbortSignal, withDeadline } as unknown as Client, beats };
}

/**
 * Temporal's mock activity environment for workflow wf-1, without its logging of every failure
 * these tests provoke on purpose; `call` is `run` with the activity's own argument and result types.
 * Its client records a submit's heartbeats (`beats`), or refuses them with `refuseBeats` after the
 * first `acceptedBeats`.
 */
export function activityEnv(
  info: ConstructorParameters<typeof MockActivityEnvironment>[0] = {},
  refuseBeats?: Error | 'unanswered',
  acceptedBeats = 0,
) {
  const { client, beats } = beatRecorder(refuseBeats, acceptedBeats);
  const env = new MockActivityEnvironment(
    { workflowExecution: { workflowId: 'wf-1', runId: 'run-1' }, ...info },
    { logger: silent, client },
  );
  return Object.assign(env, {
    beats,
    call<A extends unknown[], R>(fn: (...args: A) => Promise<R>, ...args: A): Promise<R> {
      return env.run<A, R, (...args: A) => Promise<R>>(fn, ...args);
    },
  });
}

/** What a rejected promise rejected with. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}
