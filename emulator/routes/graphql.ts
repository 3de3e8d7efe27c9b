import type { FastifyInstance } from 'fastify';
import { graphql } from 'graphql';
import type { Engine } from '../engine';
import { type GraphqlContext, rootValue, schema } from '../graphql-schema';
import { LIMITS } from '../limits';
import { graphqlBodySchema } from '../schemas';
import { parseWith, requireAccount, routeOptions } from './common';

// POST {graphql_url}?api_key=KEY with `{ query }`. A document that does not parse or validate
// answers 400 with `{ errors }`; one that executes answers 200 with `{ data, errors? }`.

export function registerGraphqlRoutes(app: FastifyInstance, engine: Engine): void {
  app.post(
    '/graphql',
    routeOptions({
      operation: 'graphql',
      iface: 'graphql',
      label: 'GraphQL',
      bodyLimit: LIMITS.otherMaxBytes,
    }),
    async (request, reply) => {
      const account = requireAccount(request);
      const body = parseWith(graphqlBodySchema, request.body, 'GraphQL request');
      const contextValue: GraphqlContext = { engine, account };
      const result = await graphql({
        schema,
        source: body.query,
        rootValue,
        contextValue,
        variableValues: body.variables ?? undefined,
        operationName: body.operationName ?? undefined,
      });
      if (result.data === undefined) reply.code(400);
      return result;
    },
  );
}
