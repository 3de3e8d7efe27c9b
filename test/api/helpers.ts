import diagnostics from 'node:diagnostics_channel';
import { inspect } from 'node:util';
import { expect } from 'vitest';
import {
  createServiceClient,
  type ServiceClient,
  type ServiceClientOptions,
  type ServiceConfigInput,
} from '../../api';
import { type Emulator, type EmulatorControl, type EmulatorOptions, startEmulator } from '../../emulator';
import { pollUntil } from '../support/poll';

export const TEST_KEY = 'sk_TEST-secret.KEY~0123456789';

// Small budgets keep the suite fast; real waits are never asserted on.
export const FAST_RETRY = { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 20 };

/** One request as the client put it on the wire, seen through undici's diagnostics channels. */
export interface WireRequest {
  method: string;
  /** Path and query exactly as sent (still percent-encoded). */
  path: string;
  headers: Record<string, string>;
  /** Bytes of body written. */
  bodyBytes: number;
  /** The status of the answer's head, once it came. */
  status?: number;
  /** The answer's head came, or the request failed. */
  settled: boolean;
  /** The body as text (only while it stays small, to keep 20 MB bodies out of memory). */
  text(): string;
  json(): unknown;
}

export interface Wire {
  requests: WireRequest[];
  /** Requests sent whose answer has not come yet. */
  inFlight(): number;
  /** The most requests in flight at once since the last clear. */
  maxInFlight: number;
  /** Resolves once `count` requests have been sent since the last clear (an event, not a poll). */
  sent(count: number): Promise<void>;
  clear(): void;
  close(): void;
}

const KEPT_BODY_BYTES = 64 * 1024;
interface UndiciRequest {
  origin: string;
  method: string;
  path: string;
  headers: string[] | string;
}
interface Recording extends WireRequest {
  chunks: Buffer[];
}

function headerRecord(headers: string[] | string): Record<string, string> {
  const record: Record<string, string> = {};
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) record[headers[i]!.toLowerCase()] = headers[i + 1]!;
  } else {
    for (const line of headers.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) record[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
  }
  return record;
}

/**
 * Records what the client sends to `origin`: the real requests of the real client, with its own
 * dispatcher and timeouts, observed where undici publishes them. No stand-in of the service needed.
 */
export function recordWire(origin: string): Wire {
  const byRequest = new WeakMap<object, Recording>();
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  let inFlight = 0;
  const wire: Wire = {
    requests: [],
    inFlight: () => inFlight,
    maxInFlight: 0,
    sent(count) {
      if (wire.requests.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    clear() {
      wire.requests = [];
      wire.maxInFlight = inFlight;
    },
    close() {
      for (const [name, listener] of listeners) diagnostics.unsubscribe(name, listener);
    },
  };
  const settle = (message: unknown, status?: number) => {
    const recording = byRequest.get((message as { request: object }).request);
    if (!recording || recording.settled) return;
    recording.settled = true;
    if (status !== undefined) recording.status = status;
    inFlight--;
  };
  const listeners: Array<[string, (message: unknown) => void]> = [
    [
      'undici:request:create',
      (message) => {
        const request = (message as { request: UndiciRequest }).request;
        if (request.origin !== origin) return;
        const chunks: Buffer[] = [];
        const recording: Recording = {
          method: request.method,
          path: request.path,
          headers: headerRecord(request.headers),
          bodyBytes: 0,
          settled: false,
          chunks,
          text: () => Buffer.concat(chunks).toString('utf8'),
          json: () => JSON.parse(recording.text()),
        };
        byRequest.set(request, recording);
        wire.requests.push(recording);
        inFlight++;
        wire.maxInFlight = Math.max(wire.maxInFlight, inFlight);
        for (const waiter of [...waiters]) {
          if (wire.requests.length < waiter.count) continue;
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      },
    ],
    [
      'undici:request:bodyChunkSent',
      (message) => {
        const { request, chunk } = message as { request: object; chunk: Buffer | string };
        const recording = byRequest.get(request);
        if (!recording) return;
        const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk);
        recording.bodyBytes += buffer.length;
        if (recording.bodyBytes <= KEPT_BODY_BYTES) recording.chunks.push(buffer);
      },
    ],
    [
      'undici:request:headers',
      (message) => settle(message, (message as { response: { statusCode: number } }).response.statusCode),
    ],
    ['undici:request:error', (message) => settle(message)],
  ];
  for (const [name, listener] of listeners) diagnostics.subscribe(name, listener);
  return wire;
}

/** The emulator as the API client's tests use it: one per file, its clock frozen, rate limits off. */
export interface TestService {
  emulator: Emulator;
  control: EmulatorControl;
  wire: Wire;
  /** Clears jobs, faults and the wire record between tests; endpoints stay. */
  reset(): void;
  close(): Promise<void>;
}

export async function startService(options: EmulatorOptions = {}): Promise<TestService> {
  // The client's own limiter is what these tests look at: the emulator's limits would only add 429s.
  const emulator = await startEmulator({
    accounts: [{ apiKey: TEST_KEY }],
    rateLimits: false,
    coldStartMs: 0,
    ...options,
  });
  // Only `advance` moves service time: a job runs, finishes or expires when a test says so.
  emulator.control.freeze();
  const wire = recordWire(new URL(emulator.apiUrl).origin);
  return {
    emulator,
    control: emulator.control,
    wire,
    reset() {
      emulator.control.reset();
      wire.clear();
    },
    async close() {
      wire.close();
      await emulator.close();
    },
  };
}

export function clientFor(
  service: TestService,
  options: ServiceClientOptions & { config?: Partial<ServiceConfigInput> } = {},
): ServiceClient {
  const { config, ...clientOptions } = options;
  const { apiUrl, graphqlUrl, restUrl } = service.emulator;
  return createServiceClient(
    { apiKey: TEST_KEY, apiUrl, graphqlUrl, restUrl, ...config },
    { retry429: FAST_RETRY, ...clientOptions },
  );
}

/**
 * Polls in-process state until `check` holds: for what no event announces (what the emulator has
 * processed). On timeout the error names `what` (test/support/poll.ts).
 */
export async function waitUntil(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  await pollUntil(what, check, { timeoutMs, intervalMs: 2 });
}

/** The rejection of a promise that must reject; no error of any test may carry the key. */
export async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    expectNoSecret(error as Error);
    return error as Error;
  }
  throw new Error('expected the call to fail');
}

/** Every way an error gets printed or stored: none of them may carry the key, raw or URL-encoded. */
export function expectNoSecret(error: Error, secret: string = TEST_KEY) {
  const renderings = [
    error.message,
    String(error),
    JSON.stringify(error),
    error.stack ?? '',
    inspect(error, { depth: 10, showHidden: true }),
    error.cause instanceof Error ? `${error.cause.message}\n${error.cause.stack}` : String(error.cause ?? ''),
  ];
  for (const text of renderings) {
    expect(text).not.toContain(secret);
    expect(text).not.toContain(encodeURIComponent(secret));
  }
}

/** Names that break a query built by pasting strings. */
export const NASTY_NAMES = [
  'plain',
  'with "double" quotes',
  "single ' quote",
  'back\\slash \\" \\\\',
  'new\nline\r\nand\ttab',
  '"}) { myself { endpoints { id } } } #',
  '""" block """',
  'unicode: é ß 漢字 😀 \u2028 \u0000 \u001f \u007f',
  '$var @dir ...frag',
];
