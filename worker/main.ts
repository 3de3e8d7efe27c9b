#!/usr/bin/env node
/**
 * `npx durable-serverless-worker` (installed) or `npm run worker` (in the repo): the worker
 * process, configured from the environment (see config.ts). Exits 0 after a graceful stop on
 * SIGINT/SIGTERM, 1 when the worker fails, 2 on a bad configuration.
 */
import { Runtime } from '@temporalio/worker';
import { ConfigError } from '../api/errors';
import { loadWorkerConfig, secretValues, type WorkerConfig } from './config';
import { createLogger } from './logger';
import { runWorker } from './run-worker';
import { abortOnSignals } from './shutdown';
import { temporalLoggerFor } from './temporal-logger';

function loadConfig(): WorkerConfig {
  try {
    return loadWorkerConfig();
  } catch (error) {
    // The message names the variable and the rule, never the value.
    if (error instanceof ConfigError) console.error(`worker: bad configuration: ${error.message}`);
    else console.error('worker: bad configuration:', error);
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, secrets: secretValues(config) });
  Runtime.install({
    logger: temporalLoggerFor(logger.child({ component: 'temporal' })),
    telemetryOptions: {
      logging: { forward: {}, filter: { core: 'WARN', other: 'ERROR' } },
      // The SDK's own metrics (task latencies, slots, polls), served by its core on their own port.
      ...(config.temporalMetricsBind
        ? { metrics: { prometheus: { bindAddress: config.temporalMetricsBind } } }
        : {}),
    },
    // The signals are ours (shutdown.ts): one path stops the worker, then the gateway and connections.
    shutdownSignals: [],
  });
  const signal = abortOnSignals(logger);
  try {
    await runWorker(config, { signal, logger });
  } catch (error) {
    logger.fatal({ err: error }, 'worker failed');
    process.exit(1);
  }
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error('worker: failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
