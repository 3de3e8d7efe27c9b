import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../emulator';

describe('emulator: the count of requests its rate limits refused', () => {
  let emulator: Emulator;
  beforeAll(async () => {
    emulator = await startEmulator({ timeScale: 1e-6 });
  });
  afterAll(async () => {
    await emulator?.close();
  });

  it('counts each 429 by endpoint and operation, and nothing that got through', async () => {
    const endpoint = emulator.control.createEndpoint('test-key', {
      name: 'throttled',
      templateId: 'scripted',
    });
    const other = emulator.control.createEndpoint('test-key', { name: 'other', templateId: 'scripted' });
    const run = (endpointId: string) =>
      fetch(`${emulator.apiUrl}/${endpointId}/purge-queue`, {
        method: 'POST',
        headers: { authorization: 'Bearer test-key' },
      });
    // /purge-queue allows 2 requests per 10 s: the third is refused, and the clock is frozen.
    const statuses = [];
    for (let k = 0; k < 3; k++) statuses.push((await run(endpoint.id)).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect((await run(other.id)).status).toBe(200);
    expect(emulator.control.throttled(endpoint.id)).toEqual({ 'purge-queue': 1 });
    expect(emulator.control.throttledBy(endpoint.id)).toEqual({ 'purge-queue': { rate: 1 } });
    expect(emulator.control.throttled(other.id)).toEqual({});
    emulator.control.reset();
    expect(emulator.control.throttled(endpoint.id)).toEqual({});
  });
});
