/**
 * Emulator figures: sustained /run and /status request rates over loopback, and memory with 100,000
 * jobs retained. Rate limits are disabled (rateLimits: false) so the figures are the emulator's own
 * ceiling, not the service's documented limits. The load generator runs in the same process (one
 * core for both), so the rates are a lower bound. Prints figures only.
 *
 *   npx tsx bench/emulator.ts [--seconds 5] [--concurrency 64] [--jobs 100000]
 */
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Pool } from 'undici';
import { startEmulator } from '../emulator';

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? Number(process.argv[index + 1]) : Number.NaN;
  return Number.isFinite(value) && value > 0 ? value : fallback;
};
const SECONDS = arg('seconds', 5);
const CONCURRENCY = arg('concurrency', 64);
const RETAINED = arg('jobs', 100_000);
const KEY = 'bench-key';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
function memory() {
  gc();
  gc();
  const { heapUsed, rss } = process.memoryUsage();
  return { heapUsed, rss };
}

async function main() {
  const emulator = await startEmulator({
    accounts: [{ apiKey: KEY }],
    rateLimits: false,
    coldStartMs: 0,
    flashBootMs: 0,
  });
  const endpoint = emulator.control.createEndpoint(KEY, {
    name: 'bench',
    templateId: 'echo',
    workersMin: 8,
    workersMax: 8,
  });
  const url = new URL(emulator.apiUrl);
  const pool = new Pool(url.origin, { connections: CONCURRENCY });
  const base = `${url.pathname}/${endpoint.id}`;
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const before = memory();

  const ids: string[] = [];
  let submitted = 0;
  const submit = async () => {
    const n = submitted++;
    const response = await pool.request({
      method: 'POST',
      path: `${base}/run`,
      headers,
      body: JSON.stringify({ input: { n, prompt: 'a short prompt of the usual size' } }),
    });
    const body = (await response.body.json()) as { id: string };
    if (response.statusCode !== 200) throw new Error(`/run answered ${response.statusCode}`);
    ids.push(body.id);
  };

  /** Runs `call` from CONCURRENCY loops until `done()`; returns requests per second. */
  async function sustain(
    call: () => Promise<void>,
    done: () => boolean,
  ): Promise<{ count: number; rate: number }> {
    let count = 0;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (!done()) {
          await call();
          count++;
        }
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    return { count, rate: count / seconds };
  }

  const timed = (seconds: number) => {
    const end = performance.now() + seconds * 1000;
    return () => performance.now() >= end;
  };

  // /run: submissions for SECONDS (or until RETAINED jobs exist).
  const runDone = timed(SECONDS);
  const run = await sustain(submit, () => runDone() || submitted >= RETAINED);

  // Top up to exactly RETAINED jobs, all finished and retained for 30 minutes.
  while (submitted < RETAINED) {
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, RETAINED - submitted) }, submit));
  }
  while (emulator.control.health(endpoint.id).jobs.completed < RETAINED) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }

  // /status: random retained jobs for SECONDS.
  const statusDone = timed(SECONDS);
  const status = await sustain(async () => {
    const id = ids[Math.floor(Math.random() * ids.length)];
    const response = await pool.request({ method: 'GET', path: `${base}/status/${id}`, headers });
    await response.body.dump();
    if (response.statusCode !== 200) throw new Error(`/status answered ${response.statusCode}`);
  }, statusDone);

  const after = memory();
  const health = emulator.control.health(endpoint.id);

  const lines = [
    `emulator bench: Node ${process.version}, ${CONCURRENCY} concurrent keep-alive connections, rate limits disabled`,
    `/run     ${run.rate.toFixed(0).padStart(7)} requests/s  (${run.count} requests)`,
    `/status  ${status.rate.toFixed(0).padStart(7)} requests/s  (${status.count} requests)`,
    `memory with ${health.jobs.completed} jobs retained (after GC):`,
    `  heapUsed ${mb(after.heapUsed)}  (${mb(before.heapUsed)} before: ${((after.heapUsed - before.heapUsed) / RETAINED).toFixed(0)} bytes per job)`,
    `  rss      ${mb(after.rss)}  (${mb(before.rss)} before)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  await pool.close();
  await emulator.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
