/**
 * The api/ client's overhead on GET /status, as a ratio to bare undici requests against
 * the same server in the same run. Prints figures; asserts nothing.
 *
 *   npx tsx bench/api-overhead.ts
 *
 * BENCH_API_URL     job-operations base up to /v2 (default: a local fastify server in a worker thread)
 * BENCH_API_KEY     key sent to it (default: bench-key)
 * BENCH_ENDPOINT_ID endpoint to poll (default: bench-endpoint)
 * BENCH_JOB_ID      job to poll; against BENCH_API_URL without it, one job is submitted first
 * BENCH_N           calls per measurement (default 5000)
 * BENCH_CONCURRENCY calls in flight in the concurrent measurement (default 64)
 * BENCH_ROUNDS      measurement rounds; the median is reported (default 3)
 *
 * Against a server that enforces the service's rate limits (2000 /status per 10 s), N
 * calls take N / 200 seconds whatever the client does: turn them off there.
 */
import { Worker } from 'node:worker_threads';
import { Agent, request } from 'undici';
import { createServiceClient } from '../api';

const N = Number(process.env.BENCH_N ?? 5000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const API_KEY = process.env.BENCH_API_KEY ?? 'bench-key';
const ENDPOINT_ID = process.env.BENCH_ENDPOINT_ID ?? 'bench-endpoint';

// The local server runs in a worker thread: on its own event loop it does not compete
// with the client being measured for the main one.
const SERVER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const Fastify = require('fastify');
const app = Fastify({ logger: false });
app.get('/v2/:endpointId/status/:jobId', async (req) => ({
  id: req.params.jobId,
  status: 'COMPLETED',
  delayTime: 120,
  executionTime: 3400,
  output: { text: ['The quick brown fox jumps over the lazy dog.'], tokens: 11 },
}));
app.listen({ host: '127.0.0.1', port: 0 }).then(() => parentPort.postMessage(app.server.address().port));
`;

async function startLocalServer() {
  const worker = new Worker(SERVER_SOURCE, { eval: true });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return { apiUrl: `http://127.0.0.1:${port}/v2`, close: () => worker.terminate() };
}

/** Runs `total` calls with `concurrency` in flight and returns the seconds it took. */
async function timeCalls(total: number, concurrency: number, call: () => Promise<unknown>): Promise<number> {
  let started = 0;
  const worker = async () => {
    while (started < total) {
      started++;
      await call();
    }
  };
  const begin = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  return Number(process.hrtime.bigint() - begin) / 1e9;
}

const SLICES = 10;

/**
 * N calls each way, in slices that alternate between the two, so that load from
 * elsewhere on the machine falls on both sides alike. Returns requests per second.
 */
async function compare(concurrency: number, bare: () => Promise<unknown>, client: () => Promise<unknown>) {
  const slice = Math.max(1, Math.floor(N / SLICES));
  let bareSeconds = 0;
  let clientSeconds = 0;
  for (let i = 0; i < SLICES; i++) {
    // Alternating which side goes first cancels out any warm-up advantage of the second.
    if (i % 2 === 0) {
      bareSeconds += await timeCalls(slice, concurrency, bare);
      clientSeconds += await timeCalls(slice, concurrency, client);
    } else {
      clientSeconds += await timeCalls(slice, concurrency, client);
      bareSeconds += await timeCalls(slice, concurrency, bare);
    }
  }
  return { bare: (slice * SLICES) / bareSeconds, client: (slice * SLICES) / clientSeconds };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function main() {
  const local = process.env.BENCH_API_URL ? undefined : await startLocalServer();
  const apiUrl = process.env.BENCH_API_URL ?? local!.apiUrl;

  const client = createServiceClient(
    { apiKey: API_KEY, apiUrl, graphqlUrl: 'http://127.0.0.1:9/graphql', restUrl: 'http://127.0.0.1:9/v1' },
    // The limiter runs (concurrency accounting included) but does not throttle: this measures overhead.
    { rateLimits: { status: { perTenSeconds: Number.POSITIVE_INFINITY, concurrent: 100_000 } } },
  );
  const bare = new Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000 });

  const jobId =
    process.env.BENCH_JOB_ID ??
    (local ? 'bench-job' : (await client.jobs.run(ENDPOINT_ID, { input: { bench: true } })).id);
  const url = `${apiUrl}/${encodeURIComponent(ENDPOINT_ID)}/status/${encodeURIComponent(jobId)}`;

  const viaClient = () => client.jobs.status(ENDPOINT_ID, jobId);
  const viaUndici = async () => {
    const response = await request(url, {
      dispatcher: bare,
      headers: { authorization: `Bearer ${API_KEY}`, accept: 'application/json' },
    });
    const body = await response.body.json();
    if (response.statusCode !== 200) throw new Error(`bare request: HTTP ${response.statusCode}`);
    return body;
  };

  console.log(
    `target ${local ? 'local fastify server' : apiUrl}; N=${N}, concurrency=${CONCURRENCY}, rounds=${ROUNDS}`,
  );
  await viaClient();
  await timeCalls(Math.min(N, 1000), CONCURRENCY, viaUndici);
  await timeCalls(Math.min(N, 1000), CONCURRENCY, viaClient);

  const modes = [
    ['sequential', 1],
    [`concurrent (${CONCURRENCY})`, CONCURRENCY],
  ] as const;
  console.log('mode                 bare undici req/s   client req/s   client/bare   (ratio per round)');
  for (const [mode, concurrency] of modes) {
    const rounds: { bare: number; client: number }[] = [];
    for (let round = 0; round < ROUNDS; round++)
      rounds.push(await compare(concurrency, viaUndici, viaClient));
    const bareRate = median(rounds.map((r) => r.bare));
    const clientRate = median(rounds.map((r) => r.client));
    const ratios = rounds.map((r) => (r.client / r.bare).toFixed(2)).join(' ');
    console.log(
      `${mode.padEnd(20)} ${bareRate.toFixed(0).padStart(17)} ${clientRate.toFixed(0).padStart(14)} ${(clientRate / bareRate).toFixed(3).padStart(13)}   (${ratios})`,
    );
    const addedUs = (1e6 / clientRate - 1e6 / bareRate).toFixed(1);
    console.log(
      `${''.padEnd(20)} ${addedUs} µs added per call, medians of ${ROUNDS} rounds of ${N} calls each way`,
    );
  }

  await client.close();
  await bare.close();
  await local?.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
