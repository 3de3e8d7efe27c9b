/** Waiting for a Temporal server this test run spawned until it answers. */
import { Connection } from '@temporalio/client';

/**
 * How long a server just spawned may take to answer its first call. The SDK's own start gives
 * it 5 s, which a JVM starting on a loaded 2-core machine can exceed; this bound only stops a
 * server that never comes up from hanging the run, it says nothing about how fast the code is.
 */
export const SERVER_START_LIMIT_MS = 120_000;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once a Temporal frontend at `address` answers a call (or throws after the limit). */
export async function untilServerAnswers(
  address: string,
  hasExited: () => string | undefined,
  call: (connection: Connection) => Promise<unknown> = (connection) =>
    connection.workflowService.getSystemInfo({}),
): Promise<void> {
  const deadline = Date.now() + SERVER_START_LIMIT_MS;
  let lastError: unknown;
  for (;;) {
    const exited = hasExited();
    if (exited) throw new Error(`the Temporal server at ${address} exited before it answered: ${exited}`);
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address, connectTimeout: 2_000 });
      const connected = connection;
      await connected.withDeadline(Date.now() + 5_000, () => call(connected));
      return;
    } catch (error) {
      lastError = error;
    } finally {
      await connection?.close().catch(() => undefined);
    }
    if (Date.now() > deadline)
      throw new Error(
        `the Temporal server at ${address} did not answer within ${SERVER_START_LIMIT_MS} ms: ${String(lastError)}`,
      );
    await pause(200);
  }
}
