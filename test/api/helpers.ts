import { inspect } from 'node:util';
import { expect } from 'vitest';
import {
  createServiceClient,
  type ServiceClient,
  type ServiceClientOptions,
  type ServiceConfigInput,
} from '../../api';
import { type FakeService, TEST_KEY } from './fake-service';

// Small budgets keep the suite fast; real waits are never asserted on.
export const FAST_RETRY = { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 20 };

export function clientFor(
  service: FakeService,
  options: ServiceClientOptions & { config?: Partial<ServiceConfigInput> } = {},
): ServiceClient {
  const { config, ...clientOptions } = options;
  return createServiceClient(
    {
      apiKey: TEST_KEY,
      apiUrl: service.apiUrl,
      graphqlUrl: service.graphqlUrl,
      restUrl: service.restUrl,
      ...config,
    },
    { retry429: FAST_RETRY, ...clientOptions },
  );
}

/** Polls until `check` holds; the timeout is a safety net for a broken test, never an assertion. */
export async function waitUntil(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
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
