#!/usr/bin/env node
/**
 * `npx durable-serverless-worker` (installed) or `npm run worker` (in the repo): the worker
 * process, configured from the environment (see config.ts). Exits 0 after a graceful stop on
 * SIGINT/SIGTERM, 1 when the worker fails, 2 on a bad configuration.
 */
import { Runtime } from '@temporalio/worker';
import type { AutomationDefinition } from '../activities/automation';
import { ConfigError } from '../api/errors';
import { loadAutomationsModuleExports } from './automations-module';
import { loadWorkerConfig, secretValues, type WorkerConfig } from './config';
import type { EventSource } from './event-sources';
import { createLogger } from './logger';
import { runWorker } from './run-worker';
import { abortOnSignals } from './shutdown';
import { temporalLoggerFor } from './temporal-logger';

function badConfiguration(error: unknown): never {
  // The message names the variable and the rule, never the value.
  if (error instanceof ConfigError) console.error(`worker: bad configuration: ${error.message}`);
  else console.error('worker: bad configuration:', error);
  process.exit(2);
}

function loadConfig(): WorkerConfig {
  try {
    return loadWorkerConfig();
  } catch (error) {
    badConfiguration(error);
  }
}

/** WORKER_AUTOMATIONS_MODULE's definitions and event sources; a module that does not load is a bad configuration. */
async function loadAutomations(
  config: WorkerConfig,
): Promise<{ automations: AutomationDefinition[]; sources: EventSource[] } | undefined> {
  if (!config.automationsModule) return undefined;
  try {
    return await loadAutomationsModuleExports(config.automationsModule);
  } catch (error) {
    badConfiguration(error);
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  // Before the runtime and the worker: a bad module stops the process before it connects.
  const loaded = await loadAutomations(config);
  const automations = loaded?.automations;
  const logger = createLogger({
    level: config.logLevel,
    secrets: [...secretValues(config), ...(loaded?.sources.flatMap((source) => source.secrets) ?? [])],
  });
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
  if (automations) logger.info({ automations: automations.map((a) => a.name) }, 'automations loaded');
  try {
    await runWorker(config, {
      signal,
      logger,
      ...(loaded ? { automations: loaded.automations, eventSources: loaded.sources } : {}),
    });
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
