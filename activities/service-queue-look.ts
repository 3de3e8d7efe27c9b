/**
 * The service's queue for an endpoint as this process last read it, sent with the process's asks
 * to the endpoint's gate (engine/service-queue.ts decides what it holds back). Read in the
 * background every READ_EVERY_MS from the first ask until the process has not asked for a while:
 * an ask never waits for a reading, and takes the last one if it is recent (none at first, or when
 * /health does not answer: the gate then holds nothing back).
 */
import type { ServiceClient } from '../api';
import { ASK_WAIT_MS, type ServiceQueue } from '../contracts/endpoint-gate';
import { QUEUE_READING_FRESH_MS } from '../engine/service-queue';

/** How often an endpoint's /health is read while this process asks its gate. */
const READ_EVERY_MS = 500;
/** How long the endpoints' workersMax are kept before they are listed again (they change rarely). */
const LISTED_FOR_MS = 60_000;
/** How soon the endpoints are listed again when one is missing from the listing (created since). */
const MISSING_LISTED_AFTER_MS = 5_000;
/**
 * How long after its last ask the process keeps reading: longer than a waiting ask goes without
 * asking again (at most a window and slack), so that every ask of a busy endpoint finds a recent
 * reading.
 */
const KEEP_READING_MS = ASK_WAIT_MS + 1_000;

export type QueueReader = {
  jobs: Pick<ServiceClient['jobs'], 'health'>;
  endpoints: Pick<ServiceClient['endpoints'], 'list'>;
};

interface EndpointReading {
  reading?: ServiceQueue;
  /** When this process last asked the endpoint's gate. */
  askedAt: number;
  /** Reading now, or waiting to read again: the endpoint is being read. */
  reading$?: Promise<void> | undefined;
  next?: NodeJS.Timeout | undefined;
}

interface ClientReadings {
  endpoints: Map<string, EndpointReading>;
  workersMax: Map<string, number>;
  listedAt: number;
  listing$?: Promise<void>;
}

/** Per service client (one per worker), so that two accounts' endpoints never mix. */
const byClient = new WeakMap<object, ClientReadings>();

async function listWorkersMax(client: QueueReader, readings: ClientReadings): Promise<void> {
  const listed = await client.endpoints.list();
  readings.workersMax.clear();
  for (const endpoint of listed) {
    if (typeof endpoint.workersMax === 'number') readings.workersMax.set(endpoint.id, endpoint.workersMax);
  }
  readings.listedAt = Date.now();
}

async function read(
  client: QueueReader,
  readings: ClientReadings,
  endpointId: string,
  entry: EndpointReading,
) {
  const listedFor = Date.now() - readings.listedAt;
  const missing = !readings.workersMax.has(endpointId);
  if (
    readings.listing$ === undefined &&
    (listedFor >= LISTED_FOR_MS || (missing && listedFor >= MISSING_LISTED_AFTER_MS))
  ) {
    // Awaited below by this reading only: a failed listing is no workersMax, never an error.
    readings.listing$ = listWorkersMax(client, readings)
      .catch(() => undefined)
      .finally(() => {
        readings.listing$ = undefined;
      });
  }
  const at = Date.now();
  const health = await client.jobs.health(endpointId);
  // The first reading of a process waits for the listing: without workersMax it holds nothing.
  await readings.listing$;
  const workersMax = readings.workersMax.get(endpointId);
  entry.reading = {
    inQueue: health.jobs.inQueue,
    running: health.workers.running,
    idle: health.workers.idle,
    ...(workersMax === undefined ? {} : { workersMax }),
    at,
  };
}

/** Reads the endpoint now and every READ_EVERY_MS after, while the process keeps asking. */
function keepReading(
  client: QueueReader,
  readings: ClientReadings,
  endpointId: string,
  entry: EndpointReading,
) {
  entry.reading$ = read(client, readings, endpointId, entry)
    .catch(() => undefined)
    .finally(() => {
      entry.reading$ = undefined;
      if (Date.now() - entry.askedAt >= KEEP_READING_MS) return;
      entry.next = setTimeout(() => {
        entry.next = undefined;
        keepReading(client, readings, endpointId, entry);
      }, READ_EVERY_MS);
      entry.next.unref();
    });
}

/**
 * The endpoint's queue as last read, if recent; the first ask in a while starts reading it. Never
 * throws: a failed reading is no reading.
 */
export function serviceQueueReading(client: QueueReader, endpointId: string): ServiceQueue | undefined {
  let readings = byClient.get(client);
  if (readings === undefined) {
    readings = { endpoints: new Map(), workersMax: new Map(), listedAt: Number.NEGATIVE_INFINITY };
    byClient.set(client, readings);
  }
  let entry = readings.endpoints.get(endpointId);
  if (entry === undefined) {
    entry = { askedAt: 0 };
    readings.endpoints.set(endpointId, entry);
  }
  const now = Date.now();
  entry.askedAt = now;
  if (entry.reading$ === undefined && entry.next === undefined)
    keepReading(client, readings, endpointId, entry);
  const last = entry.reading;
  return last !== undefined && now - last.at <= QUEUE_READING_FRESH_MS ? last : undefined;
}

/**
 * The endpoint's queue, waiting up to `waitMs` for a first reading when there is no recent one: a
 * batch's first page waits a moment so that the gate knows the queue before it grants a window's
 * worth (a single job never waits for a reading).
 */
export async function serviceQueueReadingSoon(
  client: QueueReader,
  endpointId: string,
  waitMs: number,
): Promise<ServiceQueue | undefined> {
  const now = serviceQueueReading(client, endpointId);
  if (now !== undefined) return now;
  const reading$ = byClient.get(client)?.endpoints.get(endpointId)?.reading$;
  if (reading$ !== undefined) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([reading$, new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }
  return serviceQueueReading(client, endpointId);
}
