import type { WaitingAsk } from '../../engine/endpoint-grants';

/** An ask waiting at an endpoint's gate: 10 requests at the default priority and key, unless told. */
export function waitingAsk(id: string, fields: Partial<WaitingAsk> = {}): WaitingAsk {
  return {
    id,
    count: 10,
    priority: 3,
    fairnessKey: '',
    weight: 1,
    arrivedAt: 0,
    giveUpAt: 60_000,
    ...fields,
  };
}
