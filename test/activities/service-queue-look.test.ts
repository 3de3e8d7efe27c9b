/**
 * The readings of the service's queue a worker process sends with its asks to an endpoint's gate,
 * read from the emulator over HTTP (its clock frozen: the queue is what the test makes it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceQueueReading } from '../../activities/service-queue-look';
import { createServiceClient, type ServiceClient } from '../../api';
import type { ServiceQueue } from '../../contracts/endpoint-gate';
import { type Emulator, startEmulator } from '../../emulator';
import { eventually } from '../support/integration';

const API_KEY = 'sk-service-queue-look';

describe('serviceQueueReading', () => {
  let emulator: Emulator;
  let client: ServiceClient;

  beforeAll(async () => {
    emulator = await startEmulator({ accounts: [{ apiKey: API_KEY }] });
    emulator.control.freeze();
    client = createServiceClient({
      apiKey: API_KEY,
      apiUrl: emulator.apiUrl,
      graphqlUrl: emulator.graphqlUrl,
      restUrl: emulator.restUrl,
    });
  });
  afterAll(async () => {
    await client?.close();
    await emulator?.close();
  });

  const readingOf = (endpointId: string, check: (reading: ServiceQueue) => boolean) => {
    let last: ServiceQueue | undefined;
    return eventually(
      async () => {
        last = serviceQueueReading(client, endpointId);
        return last !== undefined && check(last) ? last : undefined;
      },
      10_000,
      `a reading of ${endpointId}`,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last reading: ${JSON.stringify(last)}`);
    });
  };

  it('has none at the first ask (an ask never waits for one), then the queue as /health and the listing say', async () => {
    const endpointId = emulator.control.createEndpoint(API_KEY, {
      name: 'look',
      templateId: 'sleep',
      workersMin: 1,
      workersMax: 1,
    }).id;
    emulator.control.advance(10_000);
    expect(serviceQueueReading(client, endpointId)).toBeUndefined();
    const idle = await readingOf(endpointId, () => true);
    expect(idle).toMatchObject({ inQueue: 0, running: 0, idle: 1, workersMax: 1 });

    // One job runs and two wait: the next readings say so.
    for (let job = 0; job < 3; job++) await client.jobs.run(endpointId, { input: { sleepMs: 60_000 } });
    emulator.control.advance(1);
    const busy = await readingOf(endpointId, (reading) => reading.inQueue === 2);
    expect(busy).toMatchObject({ inQueue: 2, running: 1, idle: 0, workersMax: 1 });
  }, 30_000);

  it('finds the workersMax of an endpoint created after the endpoints were listed', async () => {
    const endpointId = emulator.control.createEndpoint(API_KEY, {
      name: 'later',
      templateId: 'echo',
      workersMin: 0,
      workersMax: 3,
    }).id;
    const reading = await readingOf(endpointId, (read) => read.workersMax !== undefined);
    expect(reading.workersMax).toBe(3);
  }, 30_000);
});
