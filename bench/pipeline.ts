/**
 * Item pipelines against the batches a user would chain. On one emulator (rate limits on) and one
 * worker process (as `npm run worker` runs it), each stage on a warm endpoint of its own:
 *
 * - default: --items items through three stages of 1 s, 2 s and 1 s of service time on three
 *   endpoints of --workers workers each: the pipeline's wall time, against (i) the user's chain,
 *   three batches one after another, each stage's batch made from the previous batch's outputs,
 *   and (ii) the slowest stage alone as one batch (run first, on a fourth endpoint: it warms the
 *   worker; then the pipeline, then the chain). Prints the ratio pipeline / slowest alone, the
 *   goal (1.15 times the slowest alone plus one item's time through the other stages) and the
 *   pipeline's history events per item per stage (every run's history length, listed by workflow id).
 * - --fault-mix: the pipeline alone under the emulator's fault mix on every stage (webhooks armed,
 *   submits under a 60 s lease): per stage, the pieces that entered it against the jobs the
 *   emulator made for it, and items with more than one job, or more than one run, at any stage.
 * - --million: --items (default 1,000,000) items from a manifest through two short stages
 *   (--service-ms of service time each, --time-scale 50, the worker's client pacing at the
 *   service's rates times the scale): every item accounted for, the worker's peak RSS and history
 *   events per item.
 *
 * Item i carries `{ i }` as its output through every stage (each stage's map passes the previous
 * output on), so the emulator's jobs say whose they are. --webhooks arms webhooks (the worker's
 * gateway in its process; the fault mix always does), else the watchers only poll. Asserts nothing. Figures on a shared
 * 2-core machine are noisy: the load average is printed beside them.
 *
 *   npm run bench:pipeline [-- --items 2000] [--workers 100] [--time-scale 1] [--webhooks]
 *   npm run bench:pipeline -- --fault-mix [--items 200]
 *   npm run bench:pipeline -- --million [--items 1000000] [--time-scale 50] [--service-ms 1000]
 *     [--workers 200] [--concurrency 1000] [--max-minutes 30]
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_RATE_LIMITS } from '../api/rate-limit';
import type { JobRequestInput } from '../api/schemas/job';
import { awaitBatch, readBatchResults, startBatch, writeBatchManifest } from '../client/batches';
import {
  awaitPipeline,
  cancelPipeline,
  getPipelineProgress,
  type PipelineInput,
  type PipelineSummary,
  readPipelineResults,
  startPipeline,
} from '../client/pipelines';
import type { StageMap } from '../contracts/pipeline-input';
import { type Emulator, startEmulator } from '../emulator';
import { injectLeaseFaultMix } from '../emulator/fault-mix';
import {
  historyByKind,
  mb,
  numberArg,
  quietRuntime,
  say,
  seconds,
  sleep,
  startDevServer,
  warmEndpoint,
} from './support';
import { startWorkerProcess, type WorkerProcess } from './worker-process';

const MILLION = process.argv.includes('--million');
const FAULT_MIX = process.argv.includes('--fault-mix');
/** Webhooks armed (the worker's gateway in its process): a job's end is heard, not only looked for. */
const WEBHOOKS = FAULT_MIX || process.argv.includes('--webhooks');
const ITEMS = Math.round(numberArg('items', MILLION ? 1_000_000 : 2_000));
const WORKERS = Math.round(numberArg('workers', MILLION ? 200 : 100));
const TIME_SCALE = numberArg('time-scale', MILLION ? 50 : 1);
const SERVICE_MS = Math.round(numberArg('service-ms', 1_000));
const CONCURRENCY = Math.round(numberArg('concurrency', MILLION ? 1_000 : WORKERS));
const MAX_MS = numberArg('max-minutes', 30) * 60_000;
const PROGRESS_EVERY_MS = 15_000;
/** Service time of the stages (default mode and fault mix): 1 s, 2 s, 1 s. */
const STAGE_MS = MILLION ? [SERVICE_MS, SERVICE_MS] : [1_000, 2_000, 1_000];
const STAGE_NAMES = MILLION ? ['first', 'second'] : ['transcribe', 'translate', 'speak'];

/** The workers' SERVERLESS_RATE_LIMITS at a time scale: the spec's rates, sped up as the emulator's windows are. */
const scaledLimits = () =>
  JSON.stringify(
    Object.fromEntries(
      Object.entries(DEFAULT_RATE_LIMITS).map(([operation, limit]) => [
        operation,
        {
          ...limit,
          perTenSeconds: Math.min(1_000_000, Math.round((limit?.perTenSeconds ?? 1) * TIME_SCALE)),
        },
      ]),
    ),
  );

const load = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(', ');

/** The item's request at the first stage: its service time and `{ i }` as its output. */
const itemRequest = (i: number): JobRequestInput => ({
  input: { sleepMs: STAGE_MS[0] as number, output: { i } },
});

/** A later stage's request, field by field: its service time, and the previous output passed on. */
const stageMap = (sleepMs: number): StageMap => ({
  'input.sleepMs': { value: sleepMs },
  'input.output': '$.previous.output',
});

/**
 * The piece a job of these benches ran for: its webhook URL names it (`&item=`, kept for the jobs
 * the emulator deleted, whose input it drops), else its input's output (`{ i }`).
 */
const itemOf = (job: { input?: Record<string, unknown>; webhook?: string }) => {
  const fromUrl = job.webhook ? new URL(job.webhook).searchParams.get('item') : null;
  if (fromUrl !== null && /^\d+$/.test(fromUrl)) return Number(fromUrl);
  return (job.input as { output?: { i?: unknown } } | undefined)?.output?.i;
};

/** Every run's history length of a workflow, summed (visibility lags a little behind the end). */
async function historyEvents(
  client: Awaited<ReturnType<typeof startDevServer>>['client'],
  workflowId: string,
  runs: number,
): Promise<{ events: number; runsSeen: number; largest: number }> {
  let lengths: number[] = [];
  for (let tries = 0; tries < 40; tries++) {
    lengths = [];
    for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
      lengths.push(run.historyLength);
    if (lengths.length >= runs && lengths.every((n) => n > 0)) break;
    await sleep(250);
  }
  return {
    events: lengths.reduce((a, b) => a + b, 0),
    runsSeen: lengths.length,
    largest: Math.max(0, ...lengths),
  };
}

/** Per item at one endpoint: its jobs (deleted ones too, as far as the emulator remembers) and its runs. */
function tallyEndpoint(emulator: Emulator, endpointId: string) {
  const jobs = new Map<unknown, number>();
  const runs = new Map<unknown, number>();
  let unattributed = 0;
  for (const job of emulator.control.jobs(endpointId, { removed: true })) {
    const item = itemOf(job);
    if (typeof item !== 'number') {
      unattributed += 1;
      continue;
    }
    jobs.set(item, (jobs.get(item) ?? 0) + 1);
    if (job.attempts > 0) runs.set(item, (runs.get(item) ?? 0) + 1);
  }
  const over = (counts: Map<unknown, number>) => [...counts.values()].filter((n) => n > 1).length;
  return {
    submissions: emulator.control.submissions(endpointId),
    jobsSeen: [...jobs.values()].reduce((a, b) => a + b, 0),
    items: jobs.size,
    submittedTwice: over(jobs),
    ranTwice: over(runs),
    unattributed,
  };
}

async function main() {
  quietRuntime();
  const apiKey = `sk-bench-${randomUUID()}`;
  const emulator = await startEmulator({ timeScale: TIME_SCALE, accounts: [{ apiKey }], coldStartMs: 0 });
  const env = await startDevServer();
  const resultDir = mkdtempSync(path.join(os.tmpdir(), 'bench-pipeline-'));
  const taskQueue = `bench-pipeline-${randomUUID()}`;
  const worker: WorkerProcess = await startWorkerProcess({
    TEMPORAL_ADDRESS: env.address,
    TEMPORAL_TASK_QUEUE: taskQueue,
    SERVERLESS_API_KEY: apiKey,
    SERVERLESS_API_URL: emulator.apiUrl,
    SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
    SERVERLESS_REST_URL: emulator.restUrl,
    RESULT_STORE_DIR: resultDir,
    LOG_LEVEL: 'error',
    ...(WEBHOOKS ? { WEBHOOK_PORT: '0', WEBHOOK_SECRET: randomBytes(32).toString('base64url') } : {}),
    ...(TIME_SCALE > 1 ? { SERVERLESS_RATE_LIMITS: scaledLimits() } : {}),
  });
  const client = env.client;
  const endpoints: string[] = [];
  for (const _ of STAGE_MS) endpoints.push(await warmEndpoint(emulator, apiKey, WORKERS));
  // Under the faults: the lease (webhooks are armed), and room for uncertain submits in a row.
  const job = FAULT_MIX ? { submitLease: 60_000, maxSubmissions: 6 } : undefined;

  /** The pipeline over `endpoints`, to its end, with progress every 15 s. */
  async function runPipeline(
    items: PipelineInput['items'],
  ): Promise<{ summary: PipelineSummary; ms: number; workflowId: string }> {
    const input: PipelineInput = {
      items,
      stages: STAGE_MS.map((sleepMs, k) => ({
        name: STAGE_NAMES[k] as string,
        endpointId: endpoints[k] as string,
        maxConcurrency: CONCURRENCY,
        ...(job ? { job } : {}),
        ...(k > 0 ? { map: stageMap(sleepMs) } : {}),
      })),
    };
    const workflowId = `bench-pipeline-${randomUUID()}`;
    const began = performance.now();
    const handle = await startPipeline(client, input, { workflowId, taskQueue });
    const outcome = awaitPipeline(client, { pipeline: handle }).then(
      (summary) => ({ summary }),
      (error: unknown) => ({ error }),
    );
    for (;;) {
      const finished = await Promise.race([outcome, sleep(PROGRESS_EVERY_MS).then(() => undefined)]);
      if (finished) {
        if ('error' in finished) throw finished.error;
        return { summary: finished.summary, ms: performance.now() - began, workflowId };
      }
      const progress = await getPipelineProgress(client, { pipeline: handle }).catch(() => undefined);
      if (progress)
        say(
          `  ... ${seconds(performance.now() - began, 0)}: read ${progress.total}; ` +
            progress.stages
              .map(
                (s) => `${s.name} ${s.counts.completed} done, ${s.running} running, ${s.buffered} buffered`,
              )
              .join('; ') +
            `; run ${progress.runs}, ${progress.events} events; load ${load()}`,
        );
      if (performance.now() - began > MAX_MS) {
        say(`  not done after ${seconds(MAX_MS, 0)}: cancelling the pipeline`);
        await cancelPipeline(client, { pipeline: handle }).catch(() => undefined);
        const finished = await outcome;
        if ('error' in finished) throw finished.error;
        return { summary: finished.summary, ms: performance.now() - began, workflowId };
      }
    }
  }

  /** One batch of these requests on one endpoint, to its end; its outputs by item index. */
  async function runBatch(endpointId: string, requests: JobRequestInput[]) {
    const began = performance.now();
    const handle = await startBatch(
      client,
      { endpointId, items: { inline: requests }, maxConcurrency: CONCURRENCY },
      { workflowId: `bench-pipeline-batch-${randomUUID()}`, taskQueue },
    );
    const summary = await awaitBatch(client, { batch: handle });
    const ms = performance.now() - began;
    const outputs: unknown[] = new Array(requests.length);
    for await (const line of readBatchResults(client, { batch: summary, store: resultDir }))
      outputs[line.index] = line.output;
    return { ms, summary, outputs };
  }

  const report = async (summary: PipelineSummary, workflowId: string) => {
    const history = await historyEvents(client, workflowId, summary.runs);
    say(
      `  ended: ${JSON.stringify(summary.ended)}; per stage completed ` +
        summary.stages.map((s) => `${s.name} ${s.counts.completed}/${s.counts.started}`).join(', '),
    );
    say(
      `  history: ${history.events} events in ${history.runsSeen} run(s) (summary: ${summary.events} in ${summary.runs}), ` +
        `largest run ${history.largest}; ${(history.events / ITEMS).toFixed(3)} per item, ` +
        `${(history.events / ITEMS / STAGE_MS.length).toFixed(3)} per item per stage`,
    );
    if (!MILLION) say(`  history by kind, all runs: ${await historyByKind(client, workflowId)}`);
    return history;
  };

  if (MILLION) {
    say(
      `${ITEMS} items (a manifest) through ${STAGE_MS.length} stages of ${SERVICE_MS} ms of service time, ` +
        `time scale ${TIME_SCALE}, ${WORKERS} workers and maxConcurrency ${CONCURRENCY} per stage, one worker process`,
    );
    const manifest = await writeBatchManifest(
      (function* () {
        for (let i = 0; i < ITEMS; i++) yield itemRequest(i);
      })(),
      { store: resultDir, key: `inputs/pipeline-${randomUUID()}.jsonl` },
    );
    worker.reset();
    say(`  load before: ${load()}`);
    const { summary, ms, workflowId } = await runPipeline({ manifest: { key: manifest.key } });
    say(`pipeline: ${seconds(ms)} (${(ITEMS / (ms / 1000)).toFixed(1)} items/s); load after: ${load()}`);
    await report(summary, workflowId);
    const origins = new Set<number>();
    let lines = 0;
    let completed = 0;
    for await (const line of readPipelineResults(client, { pipeline: summary, store: resultDir })) {
      lines += 1;
      origins.add(line.origin);
      if (line.outcome === 'completed') completed += 1;
    }
    const stages = endpoints.map((endpointId, k) => ({
      name: STAGE_NAMES[k],
      submissions: emulator.control.submissions(endpointId),
      started: summary.stages[k]?.counts.started,
    }));
    const figures = await worker.figures();
    say(
      `  accounted for: ${lines} result lines, ${origins.size} distinct items of ${ITEMS}, ${completed} completed; ` +
        `emulator submissions per stage ${stages.map((s) => `${s.name} ${s.submissions} (pieces in ${s.started})`).join(', ')}`,
    );
    say(
      `  worker peak RSS ${mb(figures.maxRssBytes)} (heap now ${mb(figures.heapUsedBytes)}); activity slots most ` +
        `${figures.inFlightMax}; bench + emulator process peak RSS ${mb(process.resourceUsage().maxRSS * 1024)}`,
    );
  } else {
    say(
      `${ITEMS} items, stages of ${STAGE_MS.join(' ms, ')} ms of service time on ${STAGE_MS.length} endpoints of ${WORKERS} ` +
        `warm workers (maxConcurrency ${CONCURRENCY} each), time scale ${TIME_SCALE}${FAULT_MIX ? ', the fault mix on every stage' : ''}` +
        `${WEBHOOKS ? ', webhooks armed' : ', polling only'}`,
    );
    // (ii) the slowest stage alone, first (it warms the worker for what follows), on an endpoint of its own.
    const slowest = STAGE_MS.indexOf(Math.max(...STAGE_MS));
    let alone = { ms: Number.NaN };
    if (!FAULT_MIX) {
      const aloneEndpoint = await warmEndpoint(emulator, apiKey, WORKERS);
      say(`  load before the slowest stage alone: ${load()}`);
      alone = await runBatch(
        aloneEndpoint,
        Array.from({ length: ITEMS }, (_, i) => ({
          input: { sleepMs: STAGE_MS[slowest] as number, output: { i } },
        })),
      );
      say(`slowest stage alone (${STAGE_MS[slowest]} ms): ${seconds(alone.ms)}; load after: ${load()}`);
    }
    const removers = FAULT_MIX
      ? endpoints.map((endpointId) => injectLeaseFaultMix(emulator.control, endpointId))
      : [];
    say(`  load before: ${load()}`);
    const serviceStart = emulator.control.now();
    const { summary, ms, workflowId } = await runPipeline({
      inline: Array.from({ length: ITEMS }, (_, i) => itemRequest(i)),
    });
    for (const remove of removers) remove();
    say(`pipeline: ${seconds(ms)}; load after: ${load()}`);
    // Where the time went: each stage's first submission and last end at the service, from the start.
    const at = (ms: number) => seconds(ms / TIME_SCALE);
    say(
      `  at the service, from the pipeline's start (first submitted / first ended / last ended): ` +
        endpoints
          .map((endpointId, k) => {
            const jobs = emulator.control.jobs(endpointId, { removed: true });
            const submitted = Math.min(...jobs.map((job) => job.submittedAt)) - serviceStart;
            const ends = jobs.map((job) => job.finishedAt ?? Number.NaN).filter(Number.isFinite);
            return `${STAGE_NAMES[k]} ${at(submitted)} / ${at(Math.min(...ends) - serviceStart)} / ${at(Math.max(...ends) - serviceStart)}`;
          })
          .join('; '),
    );
    await report(summary, workflowId);
    const tallies = endpoints.map((endpointId) => tallyEndpoint(emulator, endpointId));
    say(
      `  per stage, pieces in / emulator submissions / jobs seen / items / submitted twice / ran twice: ` +
        tallies
          .map(
            (t, k) =>
              `${STAGE_NAMES[k]} ${summary.stages[k]?.counts.started}/${t.submissions}/${t.jobsSeen}/${t.items}/` +
              `${t.submittedTwice}/${t.ranTwice}${t.unattributed ? ` (unattributed ${t.unattributed})` : ''}`,
          )
          .join('; '),
    );
    if (!FAULT_MIX) {
      // (i) the user's chain: three batches, each made from the previous batch's outputs.
      say(`  load before the chain: ${load()}`);
      let outputs: unknown[] = [];
      const chainMs: number[] = [];
      for (let k = 0; k < STAGE_MS.length; k++) {
        const requests: JobRequestInput[] =
          k === 0
            ? Array.from({ length: ITEMS }, (_, i) => itemRequest(i))
            : outputs.map((output) => ({ input: { sleepMs: STAGE_MS[k] as number, output } }));
        const stage = await runBatch(endpoints[k] as string, requests);
        chainMs.push(stage.ms);
        outputs = stage.outputs;
      }
      const chain = chainMs.reduce((a, b) => a + b, 0);
      say(
        `chain of ${STAGE_MS.length} batches: ${seconds(chain)} (${chainMs.map((t) => seconds(t)).join(' + ')}); load after: ${load()}`,
      );
      const others = STAGE_MS.reduce((a, b) => a + b, 0) - (STAGE_MS[slowest] as number);
      const goal = 1.15 * alone.ms + others / TIME_SCALE;
      say(
        `ratio pipeline / slowest alone ${(ms / alone.ms).toFixed(2)}; pipeline / chain ${(ms / chain).toFixed(2)}; ` +
          `goal: at most 1.15 x slowest alone + ${seconds(others / TIME_SCALE)} (one item through the other stages) = ` +
          `${seconds(goal)}: ${ms <= goal ? 'met' : 'NOT met'} (pipeline / goal ${(ms / goal).toFixed(2)})`,
      );
    }
  }

  await worker.stop();
  await env.teardown();
  await emulator.close();
  rmSync(resultDir, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
