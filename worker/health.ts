/**
 * The worker's health endpoint, for Kubernetes probes and Compose health checks:
 *
 * - `GET /livez`: 200 while the process is alive and its worker has not failed. It never depends
 *   on Temporal: an outage of the cluster must not get every worker restarted.
 * - `GET /readyz`: 200 once the worker polls its task queue and the Temporal frontend answers
 *   (checked at most every few seconds, with a short deadline); 503 while starting, while
 *   draining on shutdown, and while Temporal cannot be reached.
 *
 * Both answer JSON (`{ status, state, ... }`). Plain node:http: nothing here may fail to start.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type WorkerHealthState = 'starting' | 'running' | 'stopping' | 'stopped' | 'failed';

export interface WorkerHealthProbe {
  /** What the worker is doing now. */
  state(): WorkerHealthState;
  /** Resolves when the Temporal frontend answers; rejects (or times out) otherwise. */
  checkTemporal?(): Promise<void>;
}

export interface HealthServerOptions {
  host: string;
  port: number;
  probe: WorkerHealthProbe;
  /** How long a Temporal check's answer is reused (default 5 s). */
  cacheMs?: number;
  /** The deadline of a Temporal check (default 2 s). */
  timeoutMs?: number;
}

export interface HealthServer {
  url: string;
  close(): Promise<void>;
}

export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const { probe } = options;
  const cacheMs = options.cacheMs ?? 5_000;
  const timeoutMs = options.timeoutMs ?? 2_000;
  let lastCheck: { at: number; ok: boolean } | undefined;
  let inFlight: Promise<boolean> | undefined;

  const temporalReachable = (): Promise<boolean> => {
    if (!probe.checkTemporal) return Promise.resolve(true);
    if (lastCheck && Date.now() - lastCheck.at < cacheMs) return Promise.resolve(lastCheck.ok);
    inFlight ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), timeoutMs);
      });
      let ok = false;
      try {
        await Promise.race([probe.checkTemporal!(), timeout]);
        ok = true;
      } catch {
        ok = false;
      } finally {
        clearTimeout(timer);
      }
      lastCheck = { at: Date.now(), ok };
      inFlight = undefined;
      return ok;
    })();
    return inFlight;
  };

  const server: Server = createServer((request, response) => {
    const send = (status: number, body: Record<string, unknown>) => {
      response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      response.end(JSON.stringify(body));
    };
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return send(405, { error: 'method not allowed' });
    const state = probe.state();
    if (path === '/livez') {
      return state === 'failed' ? send(503, { status: 'failed', state }) : send(200, { status: 'ok', state });
    }
    if (path === '/readyz') {
      if (state !== 'running') return send(503, { status: 'not ready', state });
      temporalReachable().then(
        (ok) =>
          ok
            ? send(200, { status: 'ok', state, temporal: 'reachable' })
            : send(503, { status: 'not ready', state, temporal: 'unreachable' }),
        () => send(503, { status: 'not ready', state }),
      );
      return;
    }
    return send(404, { error: 'not found' });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
