/**
 * A minimal stand-in for the service, over real HTTP on loopback, for the api/ tests.
 * It follows SERVICE_SPEC.md where the client depends on it, checks each interface's
 * auth the way the spec states it, runs GraphQL through graphql-js against a schema
 * written from the spec, records every request, and takes scripted faults.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { buildSchema, type DocumentNode, graphql, parse } from 'graphql';

export const TEST_KEY = 'sk_TEST-secret.KEY~0123456789';

export type Route =
  | 'run'
  | 'runsync'
  | 'status'
  | 'stream'
  | 'cancel'
  | 'retry'
  | 'purge-queue'
  | 'health'
  | 'graphql'
  | 'rest-create-endpoint'
  | 'rest-delete-volume';

export interface Fault {
  route: Route | '*';
  /**
   * drop-before: socket destroyed before handling; drop-after: handled, then destroyed; hang-after:
   * handled, never answered; hold: waits before handling until the test calls releaseHeld().
   */
  kind: 'status' | 'drop-before' | 'drop-after' | 'hang-after' | 'slow' | 'hold';
  httpStatus?: number;
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
  times?: number;
}

export interface Recorded {
  route: Route;
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  bodyBytes: number;
  query: Record<string, string>;
  params: Record<string, string>;
  document?: DocumentNode;
}

interface Job {
  id: string;
  endpointId: string;
  status: string;
  input: unknown;
  output?: unknown;
}

interface EndpointRecord {
  id: string;
  name: string;
  templateId: string;
  gpuIds: string;
  type?: string | null;
  idleTimeout?: number | null;
  locations?: string | null;
  flashBootType?: string | null;
  scalerType?: string | null;
  scalerValue?: number | null;
  workersMin?: number | null;
  workersMax?: number | null;
  networkVolumeId?: string | null;
  pods: { desiredStatus: string }[];
}

const schema = buildSchema(`
  enum FlashBootType { FLASHBOOT }
  input EndpointInput {
    id: String
    name: String!
    templateId: String!
    gpuIds: String!
    type: String
    idleTimeout: Int
    locations: String
    flashBootType: FlashBootType
    scalerType: String
    scalerValue: Int
    workersMin: Int
    workersMax: Int
    networkVolumeId: String
  }
  type Pod { desiredStatus: String }
  type Endpoint {
    id: String!
    name: String!
    templateId: String!
    gpuIds: String!
    type: String
    idleTimeout: Int
    locations: String
    flashBootType: FlashBootType
    scalerType: String
    scalerValue: Int
    workersMin: Int
    workersMax: Int
    networkVolumeId: String
    pods: [Pod!]
  }
  type ServerlessDiscount { discountFactor: Float type: String expirationDate: String }
  type Myself { endpoints: [Endpoint!]! serverlessDiscount: ServerlessDiscount }
  type Query { myself: Myself }
  type Mutation {
    saveEndpoint(input: EndpointInput!): Endpoint
    deleteEndpoint(id: String!): Boolean
  }
`);

export interface FakeService {
  origin: string;
  apiUrl: string;
  graphqlUrl: string;
  restUrl: string;
  /** Every request that reached a route, faults included. */
  requests: Recorded[];
  /** Requests the service acted on (a submit here is a job created). */
  processed: Recorded[];
  jobs: Map<string, Job>;
  endpoints: Map<string, EndpointRecord>;
  volumes: Set<string>;
  streamShape: 'array' | 'object';
  maxInFlight: Partial<Record<Route, number>>;
  /** Requests a 'hold' fault is keeping from being handled, now. */
  held(): number;
  /** Lets every held request go on (the fault keeps holding new ones until cleared). */
  releaseHeld(): void;
  fault(fault: Fault): void;
  clearFaults(): void;
  reset(): void;
  close(): Promise<void>;
}

export async function startFakeService(apiKey = TEST_KEY): Promise<FakeService> {
  const app = Fastify({ bodyLimit: 64 * 1024 * 1024, forceCloseConnections: true });
  const faults: Array<Fault & { left: number }> = [];
  const inFlight: Partial<Record<Route, number>> = {};
  const hanging = new Set<FastifyReply>();
  const holding = new Set<() => void>();
  const releaseHeld = () => {
    for (const release of holding) release();
    holding.clear();
  };

  const state: FakeService = {
    origin: '',
    apiUrl: '',
    graphqlUrl: '',
    restUrl: '',
    requests: [],
    processed: [],
    jobs: new Map(),
    endpoints: new Map(),
    volumes: new Set(['vol-1']),
    streamShape: 'array',
    maxInFlight: {},
    held: () => holding.size,
    releaseHeld,
    fault(fault) {
      faults.push({ ...fault, left: fault.times ?? Number.POSITIVE_INFINITY });
    },
    clearFaults() {
      faults.length = 0;
    },
    reset() {
      releaseHeld();
      faults.length = 0;
      state.requests.length = 0;
      state.processed.length = 0;
      state.jobs.clear();
      state.endpoints.clear();
      state.volumes = new Set(['vol-1']);
      state.streamShape = 'array';
      state.maxInFlight = {};
    },
    async close() {
      releaseHeld();
      for (const reply of hanging) reply.raw.destroy();
      await app.close();
    },
  };

  // The key as each interface carries it, per the spec's Authentication table.
  function authorized(route: Route, request: FastifyRequest): boolean {
    if (route === 'graphql') return (request.query as Record<string, string>).api_key === apiKey;
    const header = request.headers.authorization;
    if (route.startsWith('rest-')) return header === `Bearer ${apiKey}`;
    return header === `Bearer ${apiKey}` || header === apiKey;
  }

  function presentedKey(route: Route, request: FastifyRequest): string {
    if (route === 'graphql') return String((request.query as Record<string, string>).api_key ?? '');
    return String(request.headers.authorization ?? '');
  }

  type Result = { status: number; body?: unknown };
  type Handler = (request: FastifyRequest, recorded: Recorded) => Result | Promise<Result>;

  function route(method: 'GET' | 'POST' | 'DELETE', url: string, name: Route, handler: Handler) {
    app.route({
      method,
      url,
      handler: async (request, reply) => {
        const recorded: Recorded = {
          route: name,
          method: request.method,
          url: request.raw.url ?? '',
          headers: { ...request.headers },
          body: request.body,
          bodyBytes: Number(request.headers['content-length'] ?? 0),
          query: { ...(request.query as Record<string, string>) },
          params: { ...(request.params as Record<string, string>) },
        };
        state.requests.push(recorded);
        inFlight[name] = (inFlight[name] ?? 0) + 1;
        state.maxInFlight[name] = Math.max(state.maxInFlight[name] ?? 0, inFlight[name] ?? 0);
        try {
          const fault = faults.find((f) => (f.route === '*' || f.route === name) && f.left > 0);
          if (fault) fault.left--;
          if (fault?.kind === 'slow')
            await new Promise((resolve) => setTimeout(resolve, fault.delayMs ?? 20));
          if (fault?.kind === 'hold') await new Promise<void>((resolve) => holding.add(resolve));
          if (fault?.kind === 'status') {
            return (
              reply
                .code(fault.httpStatus ?? 500)
                .headers(fault.headers ?? {})
                // By default it echoes the key it was given: every error built from it must be scrubbed.
                .send(
                  fault.body ?? {
                    error: `injected ${fault.httpStatus ?? 500} for ${presentedKey(name, request)} at ${request.raw.url}`,
                  },
                )
            );
          }
          if (fault?.kind === 'drop-before') {
            reply.hijack();
            request.raw.socket.destroy();
            return reply;
          }
          if (!authorized(name, request)) {
            // Echoes what it was given, as careless services do: the client must scrub it.
            const said = `invalid api key ${presentedKey(name, request)} for ${request.raw.url}`;
            return reply
              .code(401)
              .send(name === 'graphql' ? { errors: [{ message: said }] } : { error: said });
          }
          const result = await handler(request, recorded);
          state.processed.push(recorded);
          if (fault?.kind === 'drop-after') {
            reply.hijack();
            request.raw.socket.destroy();
            return reply;
          }
          if (fault?.kind === 'hang-after') {
            reply.hijack();
            hanging.add(reply);
            return reply;
          }
          if (result.status === 204) return reply.code(204).send();
          return reply.code(result.status).send(result.body);
        } finally {
          inFlight[name] = (inFlight[name] ?? 1) - 1;
        }
      },
    });
  }

  const notFound = { status: 404, body: { error: 'job not found' } };

  function submit(request: FastifyRequest, sync: boolean) {
    const { endpointId } = request.params as { endpointId: string };
    const body = request.body as { input: unknown };
    const job: Job = {
      id: sync ? `sync-${randomUUID()}` : `${randomUUID()}-u1`,
      endpointId,
      status: sync ? 'COMPLETED' : 'IN_QUEUE',
      input: body.input,
      ...(sync ? { output: { echo: body.input } } : {}),
    };
    state.jobs.set(job.id, job);
    return job;
  }

  function statusBody(job: Job) {
    return {
      id: job.id,
      status: job.status,
      delayTime: 12,
      executionTime: 34,
      ...(job.output !== undefined ? { output: job.output } : {}),
      ...(job.status === 'FAILED' ? { error: 'handler raised' } : {}),
    };
  }

  function jobOf(request: FastifyRequest): Job | undefined {
    const { endpointId, jobId } = request.params as { endpointId: string; jobId: string };
    const job = state.jobs.get(jobId);
    return job && job.endpointId === endpointId ? job : undefined;
  }

  route('POST', '/v2/:endpointId/run', 'run', (request) => {
    const job = submit(request, false);
    return { status: 200, body: { id: job.id, status: job.status } };
  });
  route('POST', '/v2/:endpointId/runsync', 'runsync', (request) => ({
    status: 200,
    body: statusBody(submit(request, true)),
  }));
  route('GET', '/v2/:endpointId/status/:jobId', 'status', (request) => {
    const job = jobOf(request);
    return job ? { status: 200, body: statusBody(job) } : notFound;
  });
  route('GET', '/v2/:endpointId/stream/:jobId', 'stream', (request) => {
    const job = jobOf(request);
    if (!job) return notFound;
    const chunks = [
      {
        output: { input_tokens: 3, output_tokens: 2, text: ['Hel', 'lo'] },
        metrics: {
          avg_gen_throughput: 1.5,
          avg_prompt_throughput: 2.5,
          cpu_kv_cache_usage: 0,
          gpu_kv_cache_usage: 0.1,
          input_tokens: 3,
          output_tokens: 2,
          pending: 0,
          running: 1,
          stream_index: 0,
          swapped: 0,
          scenario: 'stream',
        },
      },
    ];
    return {
      status: 200,
      body: state.streamShape === 'array' ? chunks : { status: job.status, stream: chunks },
    };
  });
  route('POST', '/v2/:endpointId/cancel/:jobId', 'cancel', (request) => {
    const job = jobOf(request);
    if (!job) return notFound;
    job.status = 'CANCELLED';
    return { status: 200, body: { id: job.id, status: job.status } };
  });
  route('POST', '/v2/:endpointId/retry/:jobId', 'retry', (request) => {
    const job = jobOf(request);
    if (!job) return notFound;
    if (job.status !== 'FAILED' && job.status !== 'TIMED_OUT') {
      return { status: 400, body: { error: `job is ${job.status}` } };
    }
    job.status = 'IN_QUEUE';
    delete job.output;
    return { status: 200, body: { id: job.id, status: job.status } };
  });
  route('POST', '/v2/:endpointId/purge-queue', 'purge-queue', (request) => {
    const { endpointId } = request.params as { endpointId: string };
    let removed = 0;
    for (const job of state.jobs.values()) {
      if (job.endpointId === endpointId && job.status === 'IN_QUEUE') {
        state.jobs.delete(job.id);
        removed++;
      }
    }
    return { status: 200, body: { removed, status: 'completed' } };
  });
  route('GET', '/v2/:endpointId/health', 'health', () => ({
    status: 200,
    body: {
      jobs: { completed: 1, failed: 2, inProgress: 3, inQueue: 4, retried: 5 },
      workers: { idle: 1, running: 2, throttled: 0, unhealthy: 0 },
    },
  }));

  const rootValue = {
    myself: () => ({
      endpoints: [...state.endpoints.values()],
      serverlessDiscount: { discountFactor: 0.8, type: 'CREDIT', expirationDate: '2030-01-01' },
    }),
    saveEndpoint: ({ input }: { input: Omit<EndpointRecord, 'id' | 'pods'> & { id?: string } }) => {
      if (input.id !== undefined) {
        const existing = state.endpoints.get(input.id);
        if (!existing) throw new Error(`endpoint ${input.id} not found`);
        Object.assign(existing, input);
        return existing;
      }
      const created: EndpointRecord = {
        type: 'QB',
        workersMin: 0,
        workersMax: 3,
        ...input,
        id: `ep-${randomUUID().slice(0, 8)}`,
        pods: [{ desiredStatus: 'RUNNING' }],
      };
      state.endpoints.set(created.id, created);
      return created;
    },
    deleteEndpoint: ({ id }: { id: string }) => {
      const existing = state.endpoints.get(id);
      if (!existing) throw new Error(`endpoint ${id} not found`);
      if (existing.workersMin || existing.workersMax) throw new Error('workersMin and workersMax must be 0');
      state.endpoints.delete(id);
      return null;
    },
  };

  route('POST', '/graphql', 'graphql', async (request, recorded) => {
    const { query } = request.body as { query: string };
    // Parsed by the reference parser: an escaping bug on the client side fails here.
    recorded.document = parse(query);
    const result = await graphql({ schema, source: query, rootValue });
    return { status: 200, body: result };
  });
  route('POST', '/v1/endpoints', 'rest-create-endpoint', (request) => ({
    status: 200,
    body: {
      id: `ep-${randomUUID().slice(0, 8)}`,
      ...(request.body as object),
      createdAt: '2030-01-01T00:00:00Z',
    },
  }));
  route('DELETE', '/v1/networkvolumes/:networkVolumeId', 'rest-delete-volume', (request) => {
    const { networkVolumeId } = request.params as { networkVolumeId: string };
    if (!state.volumes.delete(networkVolumeId))
      return { status: 400, body: { error: 'invalid network volume id' } };
    return { status: 204 };
  });

  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  state.origin = `http://127.0.0.1:${port}`;
  state.apiUrl = `${state.origin}/v2`;
  state.graphqlUrl = `${state.origin}/graphql`;
  state.restUrl = `${state.origin}/v1`;
  return state;
}
