/**
 * Waiting on outside state that announces no event (what a server holds, what a child process
 * printed). Where an event exists (a workflow's result, a signal, the emulator's frozen clock, a
 * promise a test resolves), wait on it instead.
 *
 * A check may throw while the state is not there yet (a workflow not started, a file not written):
 * the poll looks again. Nothing is swallowed: when the deadline passes, the error thrown names the
 * condition and carries the last error the check threw (as its cause), or else the last value seen.
 * The deadline is a safety net that turns a hang into a named failure, never an assertion on time.
 */
import { inspect } from 'node:util';

export interface PollOptions {
  timeoutMs?: number;
  /** Pause between two looks. */
  intervalMs?: number;
}

export async function pollUntil<T>(
  what: string,
  check: () => T | Promise<T>,
  { timeoutMs = 15_000, intervalMs = 10 }: PollOptions = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let outcome: { error: unknown } | { value: unknown } = { value: undefined };
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
      outcome = { value };
    } catch (error) {
      outcome = { error };
    }
    if (Date.now() > deadline) throw timedOut(what, timeoutMs, outcome);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

function timedOut(what: string, timeoutMs: number, outcome: { error: unknown } | { value: unknown }): Error {
  const waited = `${what}: not reached within ${timeoutMs} ms`;
  if ('error' in outcome) {
    const { error } = outcome;
    const said = error instanceof Error ? error.message : inspect(error);
    return new Error(`${waited}; the last check threw: ${said}`, { cause: error });
  }
  const seen = inspect(outcome.value, { depth: 3, breakLength: Number.POSITIVE_INFINITY });
  return new Error(`${waited}; last seen: ${seen.length > 500 ? `${seen.slice(0, 500)}…` : seen}`);
}

/** A name for a check that was given none: its own source, on one line. */
export function describeCheck(check: () => unknown): string {
  const source = check.toString().replace(/\s+/g, ' ').trim();
  return source.length > 160 ? `${source.slice(0, 160)}…` : source;
}
