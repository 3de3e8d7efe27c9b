/**
 * Temporary directories for tests, each removed when what made it is over. A directory made with
 * a bare `mkdtempSync` outlives the run: after a few runs the OS temp folder held thousands of them.
 *
 * - `tempDir`: inside a test or a `beforeEach`. Removed when the test has finished, after its
 *   `afterEach` hooks (vitest runs `onTestFinished` last), so a server or worker those hooks close
 *   is done with it.
 * - `suiteTempDir`: at a file's top level or in a `describe` body. Removed by an `afterAll`
 *   registered there; vitest runs `afterAll` hooks in reverse order of registration
 *   (`sequence.hooks: 'stack'`, the default), so call it before the hooks that close what uses it.
 * - `createTempDir` / `removeTempDir`: anywhere else (a `beforeAll`, support code): the caller
 *   removes the directory, e.g. in its `afterAll` once whatever uses it is closed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, onTestFinished } from 'vitest';

/** A new directory `<os temp>/<prefix>-XXXXXX`, left for the caller to remove. */
export function createTempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), `${prefix}-`));
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** A new directory removed when the current test has finished (call inside a test or `beforeEach`). */
export function tempDir(prefix: string): string {
  const dir = createTempDir(prefix);
  try {
    onTestFinished(() => removeTempDir(dir));
  } catch (error) {
    // Not inside a test (vitest refuses the hook): leave nothing behind.
    removeTempDir(dir);
    throw error;
  }
  return dir;
}

/** A new directory removed after the current suite (call at a file's top level or in a `describe`). */
export function suiteTempDir(prefix: string): string {
  const dir = createTempDir(prefix);
  afterAll(() => removeTempDir(dir));
  return dir;
}
