/**
 * The gateway's event sink in production: `sendEvent` (signalWithStart of the automation's
 * workflow) under a deadline. Without one the SDK retries an unreachable server for a long while
 * and the sender's request would time out on its side; a bounded wait gives it a clean 503.
 */
import type { Client } from '@temporalio/client';
import type { Registry } from 'prom-client';
import { sendEvent } from '../client/automations';
import type { EventIngressConfig, TemporalConfig } from './config';
import type { EventIngressOptions, EventSink } from './event-ingress';
import { createEventMetrics } from './event-metrics';
import { type EventSource, nativeEventSource } from './event-sources';

export const DEFAULT_EVENT_SIGNAL_TIMEOUT_MS = 5_000;

export function temporalEventSink(
  client: Client,
  options: { taskQueue?: string; timeoutMs?: number } = {},
): EventSink {
  const timeoutMs = options.timeoutMs ?? DEFAULT_EVENT_SIGNAL_TIMEOUT_MS;
  return async (automation, key, event) => {
    await client.withDeadline(Date.now() + timeoutMs, () =>
      sendEvent(client, event, {
        automation,
        key,
        ...(options.taskQueue ? { taskQueue: options.taskQueue } : {}),
      }),
    );
  };
}

/**
 * The gateway's `events` option: the registered automations' names, the sources of the
 * configuration (EVENT_SIGNING_SECRETS as the `default` source, EVENT_SOURCES) and of the
 * automations module. Nothing when there is no source at all: no events route.
 */
export function eventIngressOptions(
  config: { events?: EventIngressConfig; temporal: TemporalConfig },
  client: Client,
  registry?: Registry,
  module: { automations?: readonly { name: string }[]; sources?: readonly EventSource[] } = {},
): { events?: EventIngressOptions } {
  const automations = (module.automations ?? []).map((definition) => definition.name);
  const events = config.events;
  const sources = [
    ...(events && events.secrets.length > 0
      ? [nativeEventSource(events.secrets, automations, events.toleranceSeconds)]
      : []),
    ...(events?.sources ?? []),
    ...(module.sources ?? []),
  ];
  if (sources.length === 0) return {};
  return {
    events: {
      automations,
      sources,
      ...(events
        ? {
            maxBodyBytes: events.maxBodyBytes,
            maxDepth: events.maxDepth,
            replayWindowSeconds: events.replayWindowSeconds,
          }
        : {}),
      sink: temporalEventSink(client, { taskQueue: config.temporal.taskQueue }),
      ...(registry ? { metrics: createEventMetrics(registry) } : {}),
    },
  };
}
