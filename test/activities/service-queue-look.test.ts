/**
 * The readings of the service's queue a worker process sends with its asks to an endpoint's gate,
 * read from the emulator over HTTP (its clock frozen: the queue is what the test makes it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceQueueReading } from '../../activities/service-queue-look';
import type { ServiceClient } from '../../api';
import type { ServiceQueue } from '../../contracts/endpoint-gate';
import { clientFor, startService, TEST_KEY, type TestService } from '../api/helpers';
import { eventually } from '../support/integration';

describe('serviceQueueReading', () => {
  let service: TestService;
  let client: ServiceClient;

  beforeAll(async () => {
    service = await startService({ coldStartMs: 5_000 });
    client = clientFor(service);
  });
  afterAll(async () => {
    await client?.close();
    await service?.close();
  });
  /** An endpoint of the sleep template, its warm workers up. */
  const endpointOf = (workersMin: number, workersMax: number) => {
    const { id } = service.control.createEndpoint(TEST_KEY, {
      name: 'look',
      templateId: 'sleep',
      workersMin,
      workersMax,
    });
    service.control.advance(10_000);
    return id;
  };

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
    const endpointId = endpointOf(1, 1);
    expect(serviceQueueReading(client, endpointId)).toBeUndefined();
    const idle = await readingOf(endpointId, () => true);
    expect(idle).toMatchObject({ inQueue: 0, running: 0, idle: 1, workersMax: 1 });

    // One job runs and two wait: the next readings say so.
    for (let job = 0; job < 3; job++) await client.jobs.run(endpointId, { input: { sleepMs: 60_000 } });
    service.control.advance(1);
    const busy = await readingOf(endpointId, (reading) => reading.inQueue === 2);
    expect(busy).toMatchObject({ inQueue: 2, running: 1, idle: 0, workersMax: 1 });
  }, 30_000);

  it('finds the workersMax of an endpoint created after the endpoints were listed', async () => {
    const endpointId = endpointOf(0, 3);
    const reading = await readingOf(endpointId, (read) => read.workersMax !== undefined);
    expect(reading.workersMax).toBe(3);
  }, 30_000);
});
