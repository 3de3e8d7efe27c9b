/**
 * NOT a second implementation of the service: the emulator (emulator/) is the one fake of the
 * service, and every api/ test that it can serve runs against it. This answers only what the
 * emulator must never produce: bodies that break the spec (a submit answer without an id, GraphQL
 * without its result, errors beside data) and errors that echo the caller's key back, as a careless
 * service might. Each request gets the answer the test set, whatever its path.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OffSpecAnswer {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

export interface OffSpecService {
  apiUrl: string;
  graphqlUrl: string;
  restUrl: string;
  /** Decides the answer to each request (the request is there to echo what it carried). */
  answer: (request: IncomingMessage) => OffSpecAnswer;
  close(): Promise<void>;
}

export async function startOffSpecService(): Promise<OffSpecService> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const { status, headers, body } = service.answer(request);
      response.writeHead(status, { 'content-type': 'application/json', ...headers });
      response.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const service: OffSpecService = {
    apiUrl: `${origin}/v2`,
    graphqlUrl: `${origin}/graphql`,
    restUrl: `${origin}/v1`,
    answer: () => ({ status: 500, body: { error: 'no answer set' } }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return service;
}
