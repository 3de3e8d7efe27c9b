import { buildSchema, GraphQLError } from 'graphql';
import { createEndpoint, deleteEndpoint, EndpointError, endpointState, updateEndpoint } from './endpoints';
import type { Engine } from './engine';
import {
  describeZodError,
  type EndpointFields,
  endpointFieldsSchema,
  saveEndpointInputSchema,
} from './schemas';
import type { Account, Endpoint } from './store';

// The GraphQL interface as a real schema: graphql-js parses and validates every document, so a
// query built by pasting strings fails here the way it fails on a real server.

export const schema = buildSchema(/* GraphQL */ `
  "FLASHBOOT is the spec's value; OFF is the emulator's name for no FlashBoot."
  enum FlashBootType {
    FLASHBOOT
    OFF
  }

  type Pod {
    "RUNNING for every worker the endpoint has (starting, idle or busy)."
    desiredStatus: String
  }

  type Endpoint {
    id: String!
    name: String!
    templateId: String!
    gpuIds: String!
    type: String!
    idleTimeout: Int!
    locations: String
    flashBootType: FlashBootType
    scalerType: String!
    scalerValue: Int!
    workersMin: Int!
    workersMax: Int!
    networkVolumeId: String
    pods: [Pod!]!
  }

  type ServerlessDiscount {
    discountFactor: Float
    type: String
    expirationDate: String
  }

  type User {
    id: String!
    endpoints: [Endpoint!]!
    serverlessDiscount: ServerlessDiscount
  }

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

  type Query {
    myself: User!
  }

  type Mutation {
    "Without id: creates. With id: updates that endpoint."
    saveEndpoint(input: EndpointInput!): Endpoint
    "Null on success; refused unless workersMin and workersMax are both 0."
    deleteEndpoint(id: String!): String
  }
`);

export interface GraphqlContext {
  engine: Engine;
  account: Account;
}

function endpointObject(engine: Engine, endpoint: Endpoint) {
  const state = endpointState(engine, endpoint);
  return {
    id: state.id,
    name: state.name,
    templateId: state.templateId,
    gpuIds: state.gpuIds,
    type: state.type,
    idleTimeout: state.idleTimeout,
    locations: state.locations,
    flashBootType: state.flashBootType,
    scalerType: state.scalerType,
    scalerValue: state.scalerValue,
    workersMin: state.workersMin,
    workersMax: state.workersMax,
    networkVolumeId: state.networkVolumeId,
    pods: () => [...endpoint.workers.values()].map(() => ({ desiredStatus: 'RUNNING' })),
  };
}

const asGraphqlError = (error: unknown): never => {
  if (error instanceof EndpointError) throw new GraphQLError(error.message);
  throw error;
};

// Nulls in an input mean "not given" for fields that cannot be null; nullable fields keep them.
const NULLABLE = new Set(['locations', 'flashBootType', 'networkVolumeId']);
function given(input: Record<string, unknown>): Partial<Omit<EndpointFields, 'id'>> {
  return Object.fromEntries(
    Object.entries(input).filter(
      ([key, value]) => key !== 'id' && value !== undefined && (value !== null || NULLABLE.has(key)),
    ),
  ) as Partial<Omit<EndpointFields, 'id'>>;
}

export const rootValue = {
  myself: (_args: unknown, { engine, account }: GraphqlContext) => ({
    id: account.id,
    endpoints: [...account.endpoints.values()].map((endpoint) => endpointObject(engine, endpoint)),
    serverlessDiscount: account.serverlessDiscount,
  }),

  saveEndpoint: ({ input }: { input: Record<string, unknown> }, { engine, account }: GraphqlContext) => {
    const parsed = saveEndpointInputSchema.safeParse(input);
    if (!parsed.success) throw new GraphQLError(`invalid endpoint input: ${describeZodError(parsed.error)}`);
    const fields = given(parsed.data);
    try {
      if (parsed.data.id) {
        const endpoint = account.endpoints.get(parsed.data.id);
        if (!endpoint) throw new GraphQLError(`endpoint ${parsed.data.id} not found`);
        return endpointObject(engine, updateEndpoint(engine, account, endpoint, fields));
      }
      const complete = endpointFieldsSchema.safeParse(fields);
      if (!complete.success)
        throw new GraphQLError(`invalid endpoint input: ${describeZodError(complete.error)}`);
      const { id: _ignored, ...values } = complete.data;
      return endpointObject(engine, createEndpoint(engine, account, values));
    } catch (error) {
      return asGraphqlError(error);
    }
  },

  deleteEndpoint: ({ id }: { id: string }, { engine, account }: GraphqlContext) => {
    const endpoint = account.endpoints.get(id);
    if (!endpoint) throw new GraphQLError(`endpoint ${id} not found`);
    try {
      deleteEndpoint(engine, account, endpoint);
    } catch (error) {
      asGraphqlError(error);
    }
    return null;
  },
};
