/**
 * Activities that own an endpoint's life: one service call each (plus, where a retry could
 * duplicate or misread a result, one look at the account's endpoints). Errors leave as
 * ApplicationFailures typed by ServiceErrorKind (see failures.ts) or by ENDPOINT_FAILURE
 * (endpoint-failures.ts).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ServiceClient } from '../api/client';
import { ServiceError } from '../api/errors';
import type { Endpoint, SaveEndpointInput } from '../api/schemas/endpoint';
import type { HealthResponse, PurgeResponse } from '../api/schemas/job';
import type { CreateEndpointRequest } from '../contracts/endpoint-input';
import { ENDPOINT_FAILURE } from '../contracts/failures';
import { asActivityFailures, toApplicationFailure } from './failures';

export type { CreateEndpointRequest } from '../contracts/endpoint-input';

export interface EndpointActivityDeps {
  client: Pick<ServiceClient, 'endpoints' | 'rest' | 'jobs'>;
}

/** Attempt number and cancellation of the running activity; attempt 1 when called outside one. */
function current(): { attempt: number; signal?: AbortSignal } {
  try {
    const context = Context.current();
    return { attempt: context.info.attempt, signal: context.cancellationSignal };
  } catch {
    return { attempt: 1 };
  }
}

function failure(type: string, message: string, nonRetryable = true): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable });
}

/** A service error that a retry cannot fix (after failures.ts has typed it). */
function isPermanent(error: unknown): error is ServiceError {
  return error instanceof ServiceError && !error.retryable;
}

export function createEndpointActivities({ client }: EndpointActivityDeps) {
  async function listed(signal?: AbortSignal): Promise<Endpoint[]> {
    try {
      return await client.endpoints.list({ signal });
    } catch (error) {
      throw toApplicationFailure(error, { signal });
    }
  }

  async function byName(name: string, signal?: AbortSignal): Promise<Endpoint[]> {
    return (await listed(signal)).filter((endpoint) => endpoint.name === name);
  }

  async function byId(id: string, signal?: AbortSignal): Promise<Endpoint | undefined> {
    return (await listed(signal)).find((endpoint) => endpoint.id === id);
  }

  /** The one endpoint of that name, if any; several are refused rather than guessed between. */
  async function onlyByName(name: string, signal?: AbortSignal): Promise<Endpoint | undefined> {
    const matches = await byName(name, signal);
    if (matches.length > 1) {
      throw failure(
        ENDPOINT_FAILURE.duplicateName,
        `${matches.length} endpoints are named ${JSON.stringify(name)}: ${matches.map((e) => e.id).join(', ')}`,
      );
    }
    return matches[0];
  }

  return {
    /**
     * Creates an endpoint. saveEndpoint and POST /endpoints cannot be de-duplicated by the service,
     * so every attempt after the first looks for the name first: the earlier attempt may have
     * created the endpoint and lost only its answer.
     */
    async createEndpoint(request: CreateEndpointRequest): Promise<Endpoint> {
      const { attempt, signal } = current();
      const name = request.via === 'graphql' ? request.input.name : request.body.name;
      if (attempt > 1) {
        const existing = await onlyByName(name, signal);
        if (existing) return existing;
      }
      try {
        if (request.via === 'graphql') return await client.endpoints.save(request.input, { signal });
        const created = await client.rest.createEndpoint(request.body, { signal });
        const endpoint = await byId(created.id, signal);
        if (!endpoint) {
          throw failure(ENDPOINT_FAILURE.notListed, `endpoint ${created.id} is not listed yet`, false);
        }
        return endpoint;
      } catch (error) {
        // Not SubmitUncertain as for jobs: an endpoint has a name to look for, so the next attempt
        // looks first, and even a permanent error after a possible creation (a garbled 2xx) retries.
        if (
          error instanceof ServiceError &&
          error.mayHaveReachedService &&
          !error.retryable &&
          !signal?.aborted
        ) {
          throw ApplicationFailure.create({ type: error.kind, message: error.message, nonRetryable: false });
        }
        throw toApplicationFailure(error, { signal });
      }
    },

    /** Every endpoint of the account with exactly this name (the service does not keep names unique). */
    async findEndpointsByName(name: string): Promise<Endpoint[]> {
      return byName(name, current().signal);
    },

    /** The endpoint as `myself { endpoints }` lists it, or null when the account has no such id. */
    async readEndpoint(endpointId: string): Promise<Endpoint | null> {
      return (await byId(endpointId, current().signal)) ?? null;
    },

    /** saveEndpoint with id: the input must carry id, name, templateId and gpuIds. */
    async updateEndpoint(input: SaveEndpointInput & { id: string }): Promise<Endpoint> {
      const { signal } = current();
      try {
        return await client.endpoints.save(input, { signal });
      } catch (error) {
        if (isPermanent(error) && !(await byId(input.id, signal))) {
          throw failure(ENDPOINT_FAILURE.notFound, `endpoint ${input.id} does not exist`);
        }
        throw toApplicationFailure(error, { signal });
      }
    },

    /**
     * deleteEndpoint. An endpoint that is not there (any more) is success: a retry after a lost
     * answer finds it gone. A refusal is explained by reading the endpoint back.
     */
    async deleteEndpoint(endpointId: string): Promise<{ alreadyGone: boolean }> {
      const { signal } = current();
      try {
        await client.endpoints.delete(endpointId, { signal });
        return { alreadyGone: false };
      } catch (error) {
        if (!isPermanent(error)) throw toApplicationFailure(error, { signal });
        const endpoint = await byId(endpointId, signal);
        if (!endpoint) return { alreadyGone: true };
        if ((endpoint.workersMin ?? 0) !== 0 || (endpoint.workersMax ?? 0) !== 0) {
          throw failure(
            ENDPOINT_FAILURE.notScaledDown,
            `endpoint ${endpointId} has workersMin ${endpoint.workersMin} and workersMax ${endpoint.workersMax}`,
          );
        }
        throw toApplicationFailure(error, { signal });
      }
    },

    async endpointHealth(endpointId: string): Promise<HealthResponse> {
      const { signal } = current();
      return asActivityFailures({ signal }, () => client.jobs.health(endpointId, { signal }));
    },

    async purgeEndpointQueue(endpointId: string): Promise<PurgeResponse> {
      const { signal } = current();
      return asActivityFailures({ signal }, () => client.jobs.purgeQueue(endpointId, { signal }));
    },

    /**
     * Cancels one job. A job that is unknown (expired, deleted) or already finished needs nothing:
     * `status` says what the service reported, absent when it no longer knows the job.
     */
    async cancelEndpointJob(endpointId: string, jobId: string): Promise<{ jobId: string; status?: string }> {
      const { signal } = current();
      try {
        const answer = await client.jobs.cancel(endpointId, jobId, { signal });
        return { jobId, status: answer.status };
      } catch (error) {
        if (error instanceof ServiceError && error.kind === 'NotFound') return { jobId };
        throw toApplicationFailure(error, { signal });
      }
    },

    /**
     * DELETE /networkvolumes/{id}: 204 is done; 400 and 401 fail without retry. The spec answers
     * 400 for an id it does not know, which is also what a retry sees after a deletion whose 204
     * was lost: on a later attempt a 400 for a volume no endpoint uses counts as already deleted.
     */
    async deleteNetworkVolume(networkVolumeId: string): Promise<{ alreadyGone: boolean }> {
      const { attempt, signal } = current();
      try {
        await client.rest.deleteNetworkVolume(networkVolumeId, { signal });
        return { alreadyGone: false };
      } catch (error) {
        if (error instanceof ServiceError && error.kind === 'NotFound') return { alreadyGone: true };
        if (error instanceof ServiceError && error.kind === 'BadRequest' && attempt > 1) {
          const endpoints = await listed(signal);
          if (!endpoints.some((endpoint) => endpoint.networkVolumeId === networkVolumeId)) {
            return { alreadyGone: true };
          }
        }
        throw toApplicationFailure(error, { signal });
      }
    },
  };
}

export type EndpointActivities = ReturnType<typeof createEndpointActivities>;
