/**
 * The workflow tests' waits for a state that comes from events (a workflow's query, what a fake
 * activity recorded), on the suite-wide poll (test/support/poll.ts). Its deadline here is a safety
 * net just inside the test's timeout, so a loaded machine makes a test slower, never red; a wait
 * that does time out names what it waited for and the last value or error seen.
 */
import { pollUntil } from '../support/poll';

const SAFETY_NET_MS = 50_000;

/** Looks at `read()` until `ok` holds for its value, and returns that value. */
export async function waitFor<T>(
  read: () => T | Promise<T>,
  ok: (value: T) => boolean,
  what: string,
): Promise<T> {
  const seen = await pollUntil(
    what,
    async () => {
      const value = await read();
      return ok(value) ? { value } : undefined;
    },
    { timeoutMs: SAFETY_NET_MS, intervalMs: 20 },
  );
  return seen.value;
}

/** waitFor for a yes/no check. */
export async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await waitFor(check, (holds) => holds, what);
}
