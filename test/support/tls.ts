/**
 * A Temporal frontend that demands TLS, a client certificate and an API key, built from the real
 * dev server (whose `start-dev` has no TLS flags) and a terminating HTTP/2 proxy in front of it,
 * the way a load balancer or Temporal Cloud's edge sits in front of a cluster:
 *
 * - TLS with a server certificate signed by a CA of the test's own (so the client must be given
 *   the CA), issued to a name that is not the address's host (so the client must be given the
 *   server name);
 * - mTLS: a client certificate from that CA is required at the handshake;
 * - every gRPC call must carry `authorization: Bearer <api key>`, or it is answered
 *   UNAUTHENTICATED, as Temporal Cloud does.
 *
 * Every call that gets through is forwarded as is (headers, messages, trailers, cancellations) to
 * the dev server over plain HTTP/2.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createTempDir } from './temp-dir';

export const TLS_SERVER_NAME = 'temporal.test';

export interface TestPki {
  /** The caller removes it (removeTempDir) once nothing uses the certificates. */
  dir: string;
  caCertPath: string;
  serverCertPath: string;
  serverKeyPath: string;
  clientCertPath: string;
  clientKeyPath: string;
  /** A client certificate from another CA: refused at the handshake. */
  strangerCertPath: string;
  strangerKeyPath: string;
  read(file: string): string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

function issue(dir: string, name: string, ca: string, subject: string, extensions: string): void {
  openssl(dir, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`]);
  openssl(dir, ['req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`]);
  writeFileSync(path.join(dir, `${name}.ext`), extensions);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.crt`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-sha256',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.crt`,
  ]);
}

function selfSignedCa(dir: string, name: string): void {
  openssl(dir, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`]);
  openssl(dir, [
    'req',
    '-x509',
    '-new',
    '-key',
    `${name}.key`,
    '-subj',
    `/CN=${name}`,
    '-days',
    '2',
    '-sha256',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-out',
    `${name}.crt`,
  ]);
}

/** A CA, a server certificate for TLS_SERVER_NAME, a client certificate, and a stranger's. */
export function createTestPki(): TestPki {
  const dir = createTempDir('temporal-pki');
  selfSignedCa(dir, 'ca');
  selfSignedCa(dir, 'other-ca');
  const leaf = 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n';
  issue(
    dir,
    'server',
    'ca',
    `/CN=${TLS_SERVER_NAME}`,
    `${leaf}extendedKeyUsage=serverAuth\nsubjectAltName=DNS:${TLS_SERVER_NAME}\n`,
  );
  issue(dir, 'client', 'ca', '/CN=worker', `${leaf}extendedKeyUsage=clientAuth\n`);
  issue(dir, 'stranger', 'other-ca', '/CN=stranger', `${leaf}extendedKeyUsage=clientAuth\n`);
  const file = (name: string) => path.join(dir, name);
  return {
    dir,
    caCertPath: file('ca.crt'),
    serverCertPath: file('server.crt'),
    serverKeyPath: file('server.key'),
    clientCertPath: file('client.crt'),
    clientKeyPath: file('client.key'),
    strangerCertPath: file('stranger.crt'),
    strangerKeyPath: file('stranger.key'),
    read: (name: string) => readFileSync(name, 'utf8'),
  };
}

export interface TlsFrontend {
  /** `127.0.0.1:PORT`: the certificate does not name it; clients must set the server name. */
  address: string;
  /** Calls forwarded, and calls refused for want of the API key. */
  counts: { forwarded: number; refused: number };
  close(): Promise<void>;
}

// Connection-specific and pseudo headers the proxy must not copy from one connection to another.
const HOP_HEADERS = new Set([':authority', ':scheme', ':status', 'connection', 'keep-alive', 'host']);

function forwardable(headers: http2.IncomingHttpHeaders): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (!HOP_HEADERS.has(name)) out[name] = value;
  return out;
}

/** The TLS, mTLS and API-key front of `target` (the dev server's plain `host:port`). */
export async function startTlsFrontend(options: {
  target: string;
  pki: TestPki;
  apiKey: string;
}): Promise<TlsFrontend> {
  const { pki, apiKey } = options;
  const upstream = http2.connect(`http://${options.target}`);
  upstream.on('error', () => undefined);
  const counts = { forwarded: 0, refused: 0 };

  const server = http2.createSecureServer({
    key: readFileSync(pki.serverKeyPath),
    cert: readFileSync(pki.serverCertPath),
    ca: readFileSync(pki.caCertPath),
    requestCert: true,
    rejectUnauthorized: true,
    ALPNProtocols: ['h2'],
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    if (headers.authorization !== `Bearer ${apiKey}`) {
      counts.refused += 1;
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': '16',
          'grpc-message': 'missing or wrong API key',
        },
        { endStream: true },
      );
      return;
    }
    counts.forwarded += 1;
    const call = upstream.request(forwardable(headers));
    call.on('error', () => undefined);
    let trailers: http2.OutgoingHttpHeaders = {};
    let finished = false;
    const open = () => !finished && !stream.destroyed && stream.headersSent;
    call.on('response', (responseHeaders) => {
      if (stream.destroyed) return;
      // A trailers-only answer (an error before any message) ends the stream in its headers.
      const trailersOnly = 'grpc-status' in responseHeaders;
      stream.respond(
        forwardable(responseHeaders),
        trailersOnly ? { endStream: true } : { waitForTrailers: true },
      );
      if (trailersOnly) finished = true;
    });
    call.on('trailers', (received) => {
      trailers = forwardable(received);
    });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    stream.pipe(call);
    call.on('data', (chunk: Buffer) => {
      if (open()) stream.write(chunk);
    });
    call.on('end', () => {
      if (open()) stream.end();
      finished = true;
    });
    // A cancelled call (a worker's long poll at shutdown) is cancelled upstream too, and back.
    stream.on('close', () => {
      if (!call.closed) call.close(http2.constants.NGHTTP2_CANCEL);
    });
    call.on('close', () => {
      if (!finished && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
    });
  });
  server.on('tlsClientError', () => undefined);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => undefined);
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    counts,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Open sessions (a client not yet closed) would hold close() forever.
        for (const session of sessions) session.destroy();
      });
      upstream.close();
    },
  };
}
