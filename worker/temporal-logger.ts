/**
 * Temporal's Runtime logger backed by pino, so the SDK's own lines (and core's, forwarded) land in
 * the same JSON stream, with the same redaction, as the worker's.
 */
import type { LogLevel, LogMetadata, Logger as TemporalLogger } from '@temporalio/common';
import type { Logger } from './logger';

const levels = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;

export function temporalLoggerFor(logger: Logger): TemporalLogger {
  const log = (level: LogLevel, message: string, meta?: LogMetadata) => {
    // pino serializes errors only under `err`; the SDK puts them under `error`.
    const { error, ...rest } = meta ?? {};
    const fields = error instanceof Error ? { ...rest, err: error } : (meta ?? {});
    logger[levels[level]](fields, message);
  };
  return {
    log,
    trace: (message, meta) => log('TRACE', message, meta),
    debug: (message, meta) => log('DEBUG', message, meta),
    info: (message, meta) => log('INFO', message, meta),
    warn: (message, meta) => log('WARN', message, meta),
    error: (message, meta) => log('ERROR', message, meta),
  };
}
