#!/usr/bin/env node
/**
 * `npx durable-serverless-gateway` (installed) or `npm run gateway` (in the repo): the webhook
 * gateway on its own, in front of the same Temporal cluster as the workers. It needs no API key:
 * it only turns the service's webhook calls into signals.
 */
import { Client, Connection } from '@temporalio/client';
import { ConfigError } from '../api/errors';
import { connectionOptions, connectionSecrets, describeConnection } from '../client/connection';
import { acceptedSecrets, loadEventIngressConfig, loadGatewayConfig } from './config';
import { eventIngressOptions } from './event-sink';
import { startWebhookGateway } from './gateway';
import { createLogger } from './logger';
import { createPrometheusMetrics, startMetricsServer } from './metrics';
import { abortOnSignals } from './shutdown';

function loadConfig(): ReturnType<typeof loadGatewayConfig> & ReturnType<typeof loadEventIngressConfig> {
  try {
    return { ...loadGatewayConfig(), ...loadEventIngressConfig() };
  } catch (error) {
    if (error instanceof ConfigError) console.error(`gateway: bad configuration: ${error.message}`);
    else console.error('gateway: bad configuration:', error);
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const secrets = acceptedSecrets(config.webhook);
  const logger = createLogger({
    level: config.logLevel,
    secrets: [...secrets, ...(config.events?.secrets ?? []), ...connectionSecrets(config.temporal)],
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
    ...eventIngressOptions(config, client, prometheus?.registry),
  });
  logger.info(
    {
      listening: gateway.url,
      events: Boolean(config.events),
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
