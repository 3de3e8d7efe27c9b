#!/usr/bin/env node
/**
 * `npx durable-serverless-gateway` (installed) or `npm run gateway` (in the repo): the webhook
 * gateway on its own, in front of the same Temporal cluster as the workers. It needs no API key:
 * it only turns the service's webhook calls into signals.
 */
import { Client, Connection } from '@temporalio/client';
import { ConfigError } from '../api/errors';
import { connectionOptions, connectionSecrets, describeConnection } from '../client/connection';
import { loadAutomationsModuleExports } from './automations-module';
import {
  acceptedSecrets,
  loadAutomationsModuleConfig,
  loadEventIngressConfig,
  loadGatewayConfig,
} from './config';
import { eventIngressOptions } from './event-sink';
import { startWebhookGateway } from './gateway';
import { createLogger } from './logger';
import { createPrometheusMetrics, startMetricsServer } from './metrics';
import { abortOnSignals } from './shutdown';

type GatewayMainConfig = ReturnType<typeof loadGatewayConfig> &
  ReturnType<typeof loadEventIngressConfig> &
  ReturnType<typeof loadAutomationsModuleConfig>;

function badConfiguration(error: unknown): never {
  if (error instanceof ConfigError) console.error(`gateway: bad configuration: ${error.message}`);
  else console.error('gateway: bad configuration:', error);
  process.exit(2);
}

/**
 * The automations the workers register and the module's event sources: the gateway loads the
 * workers' WORKER_AUTOMATIONS_MODULE, so that an event for a name no worker runs is a 404 here.
 */
async function loadModule(
  config: GatewayMainConfig,
): Promise<Awaited<ReturnType<typeof loadAutomationsModuleExports>>> {
  if (!config.automationsModule) return { automations: [], sources: [] };
  try {
    return await loadAutomationsModuleExports(config.automationsModule);
  } catch (error) {
    badConfiguration(error);
  }
}

function loadConfig(): GatewayMainConfig {
  try {
    return { ...loadGatewayConfig(), ...loadEventIngressConfig(), ...loadAutomationsModuleConfig() };
  } catch (error) {
    badConfiguration(error);
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const loaded = await loadModule(config);
  const secrets = acceptedSecrets(config.webhook);
  const logger = createLogger({
    level: config.logLevel,
    secrets: [
      ...secrets,
      ...(config.events?.secrets ?? []),
      ...[...(config.events?.sources ?? []), ...loaded.sources].flatMap((source) => source.secrets),
      ...connectionSecrets(config.temporal),
    ],
    name: 'webhook-gateway',
  });
  // Listening from the start, so a signal during start-up still ends in an orderly close.
  const signal = abortOnSignals(logger);
  // Lazy: the gateway starts (and answers 503, which the service retries) while Temporal is still down.
  const connection = Connection.lazy(connectionOptions(config.temporal));
  const prometheus = config.metrics ? createPrometheusMetrics() : undefined;
  const metricsServer =
    config.metrics && prometheus
      ? await startMetricsServer({ ...config.metrics, registry: prometheus.registry })
      : undefined;
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const gateway = await startWebhookGateway({
    client,
    host: config.webhook.host,
    port: config.webhook.port,
    secrets,
    bodyLimitBytes: config.webhook.bodyLimitBytes,
    logger,
    ...(prometheus ? { metrics: prometheus.metrics } : {}),
    ...eventIngressOptions(config, client, prometheus?.registry, loaded),
  });
  logger.info(
    {
      listening: gateway.url,
      events: Boolean(config.events) || loaded.sources.length > 0,
      automations: loaded.automations.map((automation) => automation.name),
      metrics: metricsServer?.url,
      temporal: describeConnection(config.temporal),
    },
    'webhook gateway running',
  );
  if (!signal.aborted) {
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }
  await gateway.close();
  await metricsServer?.close();
  await connection.close();
  logger.info('webhook gateway stopped');
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error('gateway: failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
});
