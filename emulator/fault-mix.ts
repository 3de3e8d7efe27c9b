/**
 * The fault mix, as tests and benches inject it: 30% of /run answered 429 with
 * Retry-After 2 s, 10% of /run connections dropped before processing, 20% of /status answered 500,
 * 10% dropped after processing, half the webhooks lost. The first matching rule whose roll passes
 * applies, so later rules are scaled to their share. Returns the remover.
 */
import type { EmulatorControl } from './control';

export function injectLeaseFaultMix(control: EmulatorControl, endpointId: string): () => void {
  const removers = [
    control.injectFault({
      operation: 'run',
      endpointId,
      kind: 'status',
      httpStatus: 429,
      retryAfterSeconds: 2,
      probability: 0.3,
    }),
    control.injectFault({ operation: 'run', endpointId, kind: 'drop-before', probability: 0.1 / 0.7 }),
    control.injectFault({
      operation: 'status',
      endpointId,
      kind: 'status',
      httpStatus: 500,
      probability: 0.2,
    }),
    control.injectFault({ operation: 'status', endpointId, kind: 'drop-after', probability: 0.1 / 0.8 }),
    control.webhookFaults({ lose: 0.5 }),
  ];
  return () => {
    for (const remove of removers) remove();
  };
}
