/**
 * A forwarding proxy in front of the emulator that counts what crosses it: every request, and the
 * answers by status code. It is the independent count a metrics test compares the worker's own
 * counters with (the emulator counts submissions and webhook deliveries, not every call).
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CountingProxy {
  /** Its origin, e.g. http://127.0.0.1:41234: replace the emulator's origin with it. */
  origin: string;
  requests: number;
  byStatus: Map<number, number>;
  close(): Promise<void>;
}

export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const proxy: CountingProxy = { origin: '', requests: 0, byStatus: new Map(), close: async () => {} };
  const server = createServer((incoming, outgoing) => {
    proxy.requests += 1;
    const forwarded = request(
      new URL(incoming.url ?? '/', target),
      { method: incoming.method, headers: { ...incoming.headers, host: new URL(target).host } },
      (answer) => {
        const status = answer.statusCode ?? 502;
        proxy.byStatus.set(status, (proxy.byStatus.get(status) ?? 0) + 1);
        outgoing.writeHead(status, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}

/** The sum of a metric's samples in a Prometheus text scrape whose labels include all of `labels`. */
export function sampleSum(scrape: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of scrape.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? ([^ ]+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const text = match[2] ?? '';
    if (Object.entries(labels).every(([key, value]) => text.includes(`${key}="${value}"`))) {
      sum += Number(match[3]);
    }
  }
  return sum;
}
