/**
 * The batch store in a bucket against the local directory, for a manifest of 100,000 items: the
 * time and the S3 requests per item of each step a batch takes with its store. Prints a table;
 * asserts nothing.
 *
 *   npx tsx bench/store-s3.ts [--items 100000] [--page 100] [--part 100] [--pieces 10000]
 *
 * --items  the manifest's items (default 100,000)
 * --page   items per submit page, read by a worker that did not stage the batch (default 100)
 * --part   result lines per part written (default 100: a page's worth)
 * --pieces one-line files written and read back one by one (default 10,000)
 *
 * The steps, as the batch activities take them:
 *   write      the client writes the manifest (writeBatchManifest): one object, and its line index
 *   stage      the stage counts the items and reads them all in pages of 1,000 to check them
 *   pages      another worker reads every submit page by item index (a fresh store: no cache)
 *   results    the record activities write result parts of `--part` lines
 *   read back  a reader lists the parts and reads every line (readBatchResults)
 *   lines      a pipeline stage writes each piece's line as a file of its own, and the next stage
 *              reads each back by key (`lines read`: 50 at a time, a fresh store)
 *
 * Real parts: SeaweedFS (`npm run provision` builds it) on loopback, started and stopped here,
 * and the local store on this machine's disk.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BatchStore, createLocalBatchStore } from '../stores/batch-store';
import { createS3BatchStore, type S3RequestCounts } from '../stores/s3-batch-store';
import { provisionedSeaweedfs, S3_SERVER_MISSING, startS3Server } from '../test/support/s3-server';

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
};
const ITEMS = arg('items', 100_000);
const PAGE = arg('page', 100);
const PART = arg('part', 100);
const PIECES = arg('pieces', 10_000);
/** Piece lines read at once, as a page of the next stage reads them. */
const PIECES_AT_ONCE = 50;
const CHECK_PAGE = 1_000;

/** A job request as a batch's manifest holds it (about 120 bytes). */
const line = (i: number) =>
  JSON.stringify({
    input: { prompt: `item ${String(i).padStart(6, '0')} of the nightly run`, seed: i, steps: 30 },
  });

const range = (from: number, count: number) => Array.from({ length: count }, (_, k) => from + k);

/** Runs `each` on every piece index, PIECES_AT_ONCE at a time. */
async function eachPiece(each: (index: number) => Promise<void>): Promise<void> {
  for (let from = 0; from < PIECES; from += PIECES_AT_ONCE)
    await Promise.all(range(from, Math.min(PIECES_AT_ONCE, PIECES - from)).map(each));
}

interface Step {
  step: string;
  ms: number;
  requests?: number;
  /** What the step's requests are counted per: the manifest's items, or the piece lines. */
  items: number;
}

async function measure(make: () => BatchStore, counts: S3RequestCounts | undefined): Promise<Step[]> {
  const steps: Step[] = [];
  const total = () => (counts ? counts.get + counts.put + counts.list : undefined);
  const timed = async (step: string, run: () => Promise<void>, items = ITEMS) => {
    const before = total();
    const started = performance.now();
    await run();
    const after = total();
    steps.push({
      step,
      items,
      ms: performance.now() - started,
      ...(before === undefined || after === undefined ? {} : { requests: after - before }),
    });
  };
  const batch = `bench-${randomUUID()}`;
  const manifest = `${batch}/items.jsonl`;
  await timed('write', () => make().writeLines(manifest, range(0, ITEMS).map(line)));
  await timed('stage', async () => {
    const store = make();
    const count = await store.countLines(manifest);
    if (count !== ITEMS) throw new Error(`counted ${count} items, not ${ITEMS}`);
    for (let from = 0; from < count; from += CHECK_PAGE)
      await store.readLines(manifest, range(from, Math.min(CHECK_PAGE, count - from)));
  });
  await timed('pages', async () => {
    const store = make();
    for (let from = 0; from < ITEMS; from += PAGE) {
      const lines = await store.readLines(manifest, range(from, Math.min(PAGE, ITEMS - from)));
      if (lines[0] !== line(from)) throw new Error(`page at ${from} read the wrong line`);
    }
  });
  await timed('results', async () => {
    const store = make();
    for (let from = 0; from < ITEMS; from += PART) {
      const lines = range(from, Math.min(PART, ITEMS - from)).map((index) =>
        JSON.stringify({ index, status: 'COMPLETED', jobId: `job-${index}`, output: { ok: true } }),
      );
      await store.writeLines(`${batch}/results/${String(from).padStart(8, '0')}.jsonl`, lines);
    }
  });
  await timed('read back', async () => {
    const store = make();
    let read = 0;
    for (const part of await store.list(`${batch}/results`)) {
      const count = await store.countLines(part);
      read += (await store.readLines(part, range(0, count))).length;
    }
    if (read !== ITEMS) throw new Error(`read ${read} result lines, not ${ITEMS}`);
  });
  const piece = (index: number) => `${batch}/lines/${String(index).padStart(8, '0')}.jsonl`;
  const pieceLine = (index: number) =>
    JSON.stringify({ origin: index, stage: 'caption', output: { ok: true } });
  await timed(
    'lines written',
    async () => {
      const store = make();
      await eachPiece((index) => store.writeLines(piece(index), [pieceLine(index)]));
    },
    PIECES,
  );
  await timed(
    'lines read',
    async () => {
      const store = make();
      await eachPiece(async (index) => {
        const [read] = await store.readLines(piece(index), [0]);
        if (read !== pieceLine(index)) throw new Error(`piece ${index} read the wrong line`);
      });
    },
    PIECES,
  );
  return steps;
}

async function main(): Promise<void> {
  if (!provisionedSeaweedfs()) throw new Error(S3_SERVER_MISSING);
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-store-'));
  const server = await startS3Server('bench');
  try {
    await server.createBucket('bench');
    const local = await measure(() => createLocalBatchStore(dir), undefined);
    const counts: S3RequestCounts = { get: 0, put: 0, list: 0 };
    const s3 = await measure(
      () =>
        createS3BatchStore(server.location('bench', 'p'), {
          clientConfig: server.clientConfig({ maxAttempts: 3 }),
          requests: counts,
        }),
      counts,
    );
    console.log(
      `\n${ITEMS.toLocaleString('en-US')} items, pages of ${PAGE}, result parts of ${PART}, ` +
        `${PIECES.toLocaleString('en-US')} piece lines; SeaweedFS on loopback\n`,
    );
    console.log('| step | local | S3 | S3 requests | per item | local, items a second |');
    console.log('|---|---|---|---|---|---|');
    for (const [k, step] of local.entries()) {
      const remote = s3[k] as Step;
      const requests = remote.requests ?? 0;
      console.log(
        `| ${step.step} | ${(step.ms / 1000).toFixed(2)} s | ${(remote.ms / 1000).toFixed(2)} s | ${requests} | ` +
          `${(requests / step.items).toFixed(4)} | ${Math.round(step.items / (step.ms / 1000)).toLocaleString('en-US')} |`,
      );
    }
    console.log(`\nS3 requests in all: ${counts.get} GET, ${counts.put} PUT, ${counts.list} LIST`);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
