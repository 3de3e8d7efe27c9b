import type { IncomingHttpHeaders } from 'node:http';
import { request } from 'undici';
import { type Emulator, type EmulatorOptions, startEmulator } from '../../emulator';
import { pollUntil } from '../support/poll';

export const KEY = 'test-key';
export const OTHER_KEY = 'other-key';

export interface HttpResult {
  status: number;
  headers: IncomingHttpHeaders;
  // biome-ignore lint/suspicious/noExplicitAny: tests look into response bodies freely
  body: any;
}

/** One real HTTP request over loopback; the body is parsed as JSON when it is JSON. */
export async function http(
  method: string,
  url: string,
  options: { headers?: Record<string, string>; json?: unknown; body?: string | Buffer } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...options.headers };
  let body = options.body;
  if (options.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.json);
  }
  const response = await request(url, { method: method as 'GET', headers, body });
  const text = await response.body.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.statusCode, headers: response.headers, body: parsed };
}

/** Job operations of one endpoint, as a client with the given key would call them. */
export function jobsApi(emulator: Emulator, endpointId: string, key = KEY) {
  const base = `${emulator.apiUrl}/${endpointId}`;
  const auth = { authorization: `Bearer ${key}` };
  return {
    base,
    run: (body: unknown) => http('POST', `${base}/run`, { headers: auth, json: body }),
    runsync: (body: unknown, query = '') =>
      http('POST', `${base}/runsync${query}`, { headers: auth, json: body }),
    status: (id: string, query = '') => http('GET', `${base}/status/${id}${query}`, { headers: auth }),
    statusSync: (id: string, query = '') =>
      http('GET', `${base}/status-sync/${id}${query}`, { headers: auth }),
    stream: (id: string) => http('GET', `${base}/stream/${id}`, { headers: auth }),
    cancel: (id: string) => http('POST', `${base}/cancel/${id}`, { headers: auth }),
    retry: (id: string) => http('POST', `${base}/retry/${id}`, { headers: auth }),
    purge: () => http('POST', `${base}/purge-queue`, { headers: auth }),
    health: () => http('GET', `${base}/health`, { headers: auth }),
    requests: () => http('GET', `${base}/requests`, { headers: auth }),
  };
}

export function graphqlApi(emulator: Emulator, key = KEY) {
  return (query: string, variables?: Record<string, unknown>) =>
    http('POST', `${emulator.graphqlUrl}?api_key=${encodeURIComponent(key)}`, {
      json: variables === undefined ? { query } : { query, variables },
    });
}

/**
 * Polls until `check` returns something truthy, for state no event announces; on timeout the error
 * names `what` and carries the check's last error or value (test/support/poll.ts).
 */
export function waitFor<T>(
  check: () => T | Promise<T>,
  what: string,
  timeoutMs = 15_000,
): Promise<NonNullable<T>> {
  return pollUntil(what, check, { timeoutMs, intervalMs: 2 });
}

/** Starts an emulator with two accounts; timeScale 1 unless told, so tests move time with advance(). */
export async function startTestEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  return startEmulator({
    accounts: [{ apiKey: KEY }, { apiKey: OTHER_KEY }],
    ...options,
  });
}

export const MINUTE = 60_000;
