import { z } from 'zod';
import type { ServiceConfig } from './config';
import { excerpt, redact, ServiceError, ValidationError, validationErrorFrom } from './errors';
import { enumLiteral, type LiteralValue, printOperation, type Selection } from './graphql-literal';
import { decodeJson, decodeValue, type HttpResponse, type Transport } from './http';
import type { CallOptions } from './jobs';
import {
  accountSchema,
  endpointSchema,
  flashBootTypeSchema,
  type SaveEndpointInput,
  saveEndpointInputSchema,
  serverlessDiscountSchema,
} from './schemas/endpoint';

// Selected from the schemas, so a field added there is asked for here. pods is for listings only.
const ENDPOINT_FIELDS: Selection[] = Object.keys(endpointSchema.shape).filter((field) => field !== 'pods');
const LISTED_ENDPOINT_FIELDS: Selection[] = [...ENDPOINT_FIELDS, { pods: ['desiredStatus'] }];
const DISCOUNT_FIELDS: Selection[] = Object.keys(serverlessDiscountSchema.shape);

const envelopeSchema = z.object({
  data: z.record(z.string(), z.unknown()).nullish(),
  errors: z.array(z.unknown()).nullish(),
});

/** Turns validated input into GraphQL literals; enums are written bare only after their check. */
function endpointInputLiteral(input: Record<string, unknown>): Record<string, LiteralValue | undefined> {
  const literal: Record<string, LiteralValue | undefined> = {};
  for (const [field, value] of Object.entries(input)) {
    if (value === undefined) continue;
    literal[field] =
      field === 'flashBootType' && value !== null
        ? enumLiteral(`input.${field}`, String(value), flashBootTypeSchema.options)
        : (value as LiteralValue);
  }
  return literal;
}

export function createEndpointOperations(config: ServiceConfig, transport: Transport) {
  const url = new URL(config.graphqlUrl);
  url.searchParams.set('api_key', config.apiKey);
  const graphqlUrl = url.toString();
  const secrets = [config.apiKey];

  async function execute(
    operation: string,
    query: string,
    submit: boolean,
    options: CallOptions | undefined,
  ) {
    return transport.send({
      operation,
      method: 'POST',
      url: graphqlUrl,
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query }),
      submit,
      signal: options?.signal,
    });
  }

  /** `data.<field>` of a response; an `errors` array fails the call whatever the HTTP status said. */
  function dataOf(response: HttpResponse, field: string, submit: boolean): unknown {
    const envelope = decodeJson(response, envelopeSchema);
    const data = envelope.data ?? undefined;
    if (envelope.errors && envelope.errors.length > 0) {
      const messages = envelope.errors
        .map((item) =>
          item && typeof item === 'object' && typeof (item as { message?: unknown }).message === 'string'
            ? (item as { message: string }).message
            : JSON.stringify(item),
        )
        .join('; ');
      const text = redact(messages, secrets);
      throw new ServiceError({
        kind: 'GraphQLError',
        operation: response.info.operation,
        message: `${response.info.operation} (GraphQL): ${text.length > 300 ? `${text.slice(0, 300)}…` : text}`,
        status: response.status,
        retryable: false,
        bodyExcerpt: excerpt(response.text, secrets),
        // The service answered; only a result alongside the errors shows something was done.
        mayHaveReachedService: submit && data?.[field] != null,
      });
    }
    if (!data || !(field in data)) {
      throw new ServiceError({
        kind: 'InvalidResponse',
        operation: response.info.operation,
        message: `${response.info.operation} (GraphQL): response has no data.${field}`,
        status: response.status,
        retryable: false,
        bodyExcerpt: excerpt(response.text, secrets),
        mayHaveReachedService: submit,
      });
    }
    return data[field];
  }

  return {
    /** saveEndpoint: creates without id, updates with id. */
    async save(input: SaveEndpointInput, options?: CallOptions) {
      const result = saveEndpointInputSchema.safeParse(input);
      if (!result.success) throw validationErrorFrom(result.error, 'input');
      const creating = result.data.id === undefined;
      // On an update the type default must not be sent: it would turn an LB endpoint into QB.
      const fields: Record<string, unknown> =
        creating || input.type !== undefined ? { ...result.data } : { ...result.data, type: undefined };
      const query = printOperation(
        'mutation',
        'saveEndpoint',
        { input: endpointInputLiteral(fields) },
        ENDPOINT_FIELDS,
      );
      const response = await execute('saveEndpoint', query, creating, options);
      return decodeValue(response, dataOf(response, 'saveEndpoint', creating), endpointSchema);
    },

    /** myself { endpoints { ... pods { desiredStatus } } } */
    async list(options?: CallOptions) {
      const query = printOperation('query', 'myself', {}, [{ endpoints: LISTED_ENDPOINT_FIELDS }]);
      const response = await execute('listEndpoints', query, false, options);
      const myself = decodeValue(
        response,
        dataOf(response, 'myself', false),
        z.object({ endpoints: z.array(endpointSchema) }),
      );
      return myself.endpoints;
    },

    /** myself { endpoints { ... } serverlessDiscount { ... } } */
    async account(options?: CallOptions) {
      const query = printOperation('query', 'myself', {}, [
        { endpoints: LISTED_ENDPOINT_FIELDS },
        { serverlessDiscount: DISCOUNT_FIELDS },
      ]);
      const response = await execute('account', query, false, options);
      return decodeValue(response, dataOf(response, 'myself', false), accountSchema);
    },

    /** deleteEndpoint(id): the service refuses unless workersMin and workersMax are 0. */
    async delete(id: string, options?: CallOptions) {
      if (typeof id !== 'string' || id.length === 0)
        throw new ValidationError('id', 'must be a non-empty string');
      const query = printOperation('mutation', 'deleteEndpoint', { id }, undefined);
      const response = await execute('deleteEndpoint', query, false, options);
      dataOf(response, 'deleteEndpoint', false);
    },
  };
}

export type EndpointOperations = ReturnType<typeof createEndpointOperations>;
