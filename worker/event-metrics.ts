/**
 * The event ingress's counters in Prometheus form, in the registry the gateway already exports
 * (worker/metrics.ts): events received, and events by result and reason. Both labels come from the
 * fixed set of EventVerdict: never an automation name, a key or an event id.
 */
import { Counter, type Registry } from 'prom-client';
import type { EventMetrics } from './event-ingress';
import { METRIC_PREFIX } from './metrics';

export function createEventMetrics(registry: Registry): EventMetrics {
  const received = new Counter({
    name: `${METRIC_PREFIX}events_received_total`,
    help: 'Events that reached POST /events/{automation}',
    registers: [registry],
  });
  const events = new Counter({
    name: `${METRIC_PREFIX}events_total`,
    help: 'Events by result (accepted: signalled or a duplicate answered 200; refused) and reason',
    labelNames: ['result', 'reason'] as const,
    registers: [registry],
  });
  return {
    event(verdict) {
      received.inc();
      events.inc({ result: verdict.accepted ? 'accepted' : 'refused', reason: verdict.reason });
    },
  };
}
