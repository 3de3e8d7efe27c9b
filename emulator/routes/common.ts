import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { AppliedFault } from '../faults';
import type { RateOperation } from '../limits';
import { describeZodError, type FaultOperation } from '../schemas';
import type { Account, Endpoint } from '../store';

export type Interface = 'jobs' | 'graphql' | 'rest';

/** Carried in each route's `config`; the shared hooks read it. */
export interface RouteConfig {
  operation: Exclude<FaultOperation, '*'>;
  iface: Interface;
  rate?: RateOperation;
  /** How error messages name the operation, e.g. "/run". */
  label: string;
  bodyLimit: number;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** What the onRequest hook learned about a request: who asked, about which endpoint, with which fault. */
export interface RequestContext {
  account?: Account;
  endpoint?: Endpoint;
  fault?: AppliedFault;
}

// A WeakMap rather than decorateRequest: no global type augmentation leaks into the other parts of
// the project that use fastify.
const contexts = new WeakMap<FastifyRequest, RequestContext>();

export function contextOf(request: FastifyRequest): RequestContext {
  let context = contexts.get(request);
  if (!context) {
    context = {};
    contexts.set(request, context);
  }
  return context;
}

export function routeConfig(request: FastifyRequest): RouteConfig | undefined {
  const config = request.routeOptions.config as Partial<RouteConfig> | undefined;
  return config?.operation && config.iface ? (config as RouteConfig) : undefined;
}

export function requireAccount(request: FastifyRequest): Account {
  const account = contextOf(request).account;
  if (!account) throw new HttpError(401, 'unauthorized');
  return account;
}

export function requireEndpoint(request: FastifyRequest): Endpoint {
  const endpoint = contextOf(request).endpoint;
  if (!endpoint) throw new HttpError(404, 'endpoint not found');
  return endpoint;
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown, what = 'request'): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new HttpError(400, `invalid ${what}: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

/** The error body of each interface: `{ error }`, or GraphQL's `{ errors: [{ message }] }`. */
export function errorBody(iface: Interface, message: string): unknown {
  return iface === 'graphql' ? { errors: [{ message }] } : { error: message };
}

/** Aborts when the client goes away before the answer is sent. */
export function abortOnClose(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

export function routeOptions(config: RouteConfig) {
  return { bodyLimit: config.bodyLimit, config };
}
