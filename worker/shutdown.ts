/**
 * SIGINT/SIGTERM to an AbortSignal, for the two entry points. The first signal asks for a graceful
 * stop; a second one means the operator has stopped waiting, so the process exits at once.
 */
import type { Logger } from './logger';

export function abortOnSignals(
  logger: Logger,
  signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM'],
): AbortSignal {
  const controller = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      logger.warn({ signal: name }, 'second signal: exiting without waiting');
      process.exit(130);
    }
    logger.info({ signal: name }, 'signal received: shutting down gracefully');
    controller.abort();
  };
  for (const name of signals) process.on(name, onSignal);
  return controller.signal;
}
