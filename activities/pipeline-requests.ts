/**
 * A pipeline stage's requests, made in the activity that submits them (never in the workflow, so
 * no output enters history): the item as it is, the stage's map evaluated on the item and the
 * previous stage's result (engine/pipeline-map.ts), or the input a transform wrote. A retried
 * submit reads the same store and makes the same requests.
 */
import type { BatchResultLine } from '../contracts/batch-summary';
import {
  type PieceRef,
  type PreviousResult,
  type StagePageSource,
  stageInputKey,
  stageKeyOf,
  stageLineKey,
} from '../contracts/pipeline-types';
import { evaluateMap, mapFailureText } from '../engine/pipeline-map';
import { BatchStoreError } from '../stores/batch-store';
import type { BatchShared } from './batch-shared';

/** A request as a manifest line, or why it could not be made (the piece then fails its stage). */
export type StageRequestLine = string | { failed: string };

type Stores = Pick<BatchShared, 'store' | 'outputs'>;

/** Reads one line; a key that is not there is `undefined` (a store that fails throws). */
export async function readOne(shared: Stores, key: string): Promise<string | undefined> {
  try {
    const [line] = await shared.store.readLines(key, [0]);
    return line;
  } catch (error) {
    if (error instanceof BatchStoreError && !error.retryable) return undefined;
    throw error;
  }
}

/** The previous stage's result for the piece numbered `seq`, as a map's `$.previous`. */
export async function previousResult(
  shared: Stores,
  pipelineKey: string,
  stage: string,
  seq: number,
): Promise<PreviousResult | { failed: string }> {
  const text = await readOne(shared, stageLineKey(stageKeyOf(pipelineKey, stage), seq));
  if (text === undefined) return { failed: `stage "${stage}" has no result for this piece` };
  const line = JSON.parse(text) as BatchResultLine;
  const output =
    line.outputRef === undefined
      ? line.output
      : await shared.outputs.get(line.outputRef as Parameters<Stores['outputs']['get']>[0]);
  return { output, ...(line.jobId === undefined ? {} : { jobId: line.jobId }), stage };
}

export async function stageRequestLines(
  shared: Stores,
  source: StagePageSource,
  seqs: readonly number[],
): Promise<StageRequestLine[]> {
  const { pipelineKey, stage, map, previous } = source;
  const stageKey = stageKeyOf(pipelineKey, stage);
  const origins = source.pieces.map((piece) => piece[0] as number);
  if (source.transformed) {
    return Promise.all(
      source.pieces.map(async ([origin, ...part]: PieceRef) => {
        const line = await readOne(shared, stageInputKey(stageKey, origin as number, part));
        return line ?? { failed: `stage "${stage}": its transform's input for this piece is missing` };
      }),
    );
  }
  const items = await shared.store.readLines(source.manifestKey, origins);
  if (map === undefined) return items;
  return Promise.all(
    items.map(async (line, k): Promise<StageRequestLine> => {
      const item: unknown = JSON.parse(line);
      let prior: PreviousResult | undefined;
      if (previous !== undefined) {
        const read = await previousResult(shared, pipelineKey, previous, seqs[k] as number);
        if ('failed' in read) return read;
        prior = read;
      }
      const made = evaluateMap(stage, map, { item, ...(prior === undefined ? {} : { previous: prior }) });
      return made.ok ? JSON.stringify(made.request) : { failed: mapFailureText(made.failure) };
    }),
  );
}
