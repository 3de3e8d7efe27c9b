/**
 * A stand-in for the load balancer in front of webhook gateways: it listens on a port of its own
 * (bound as port 0, so the address is taken, not guessed) and forwards every request to whichever
 * gateway it currently points at. Workers behind it can die and be replaced on other ports while
 * the public URL the service calls stays the same. With no target it answers 503, as a balancer
 * with no healthy backend does.
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Relay {
  /** The public URL (http://127.0.0.1:PORT). */
  url: string;
  /** The gateway requests go to now, e.g. a worker's `gatewayUrl`; undefined: answer 503. */
  target: string | undefined;
  close(): Promise<void>;
}

export async function startRelay(): Promise<Relay> {
  const relay: Relay = { url: '', target: undefined, close: async () => undefined };
  const server = createServer((incoming, outgoing) => {
    const target = relay.target;
    if (!target) {
      incoming.resume();
      outgoing.writeHead(503).end('no gateway behind the relay');
      return;
    }
    const forwarded = request(
      new URL(incoming.url ?? '/', target),
      { method: incoming.method, headers: { ...incoming.headers, host: new URL(target).host } },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => {
      if (!outgoing.headersSent) outgoing.writeHead(502).end('the gateway behind the relay did not answer');
      else outgoing.destroy();
    });
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  relay.url = `http://127.0.0.1:${port}`;
  relay.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return relay;
}
