/**
 * A pipeline's redrive: the pieces of a finished pipeline that did not complete (failed, or never
 * started when it stopped), each started again at the stage it ended at. Staging numbers each
 * piece in the new pipeline and copies what its stage makes its input from under that number:
 * the previous stage's result line, or the input its transform wrote. The stage's submit then
 * reads them as it reads any piece's (pipeline-requests.ts), and the item from the first
 * pipeline's manifest. A piece whose transform failed or never ran waits for it again.
 */
import { Context } from '@temporalio/activity';
import type { EndpointLimit } from '../contracts/batch-types';
import { MAX_PIPELINE_BUFFERED } from '../contracts/pipeline-input';
import {
  type PipelineResultLine,
  pipelineResultsKey,
  redriveListKey,
  stageInputKey,
  stageKeyOf,
  stageLineKey,
} from '../contracts/pipeline-types';
import { type RedriveLine, type RedriveParked, redriveSources } from '../engine/pipeline-carry';
import { batchKeyFor } from '../stores/batch-store';
import { badRequest } from './batch-items';
import { type BatchShared, batchContext } from './batch-shared';
import { readOne } from './pipeline-requests';

/** A listed piece as the redrive's list holds it: its number in the new pipeline, origin and part. */
export interface RedriveListEntry {
  seq: number;
  origin: number;
  part?: number[];
}

/** Copies run this many at a time. */
const COPIES_AT_ONCE = 50;

export function pipelineRedriveActivities(shared: BatchShared) {
  const { store, limitInForce } = shared;

  /** Copies one line from `from` to `to`; false when there is none to copy. */
  async function copy(from: string, to: string): Promise<boolean> {
    const line = await readOne(shared, from);
    if (line === undefined) return false;
    await store.writeLines(to, [line]);
    return true;
  }

  async function readResultLines(key: string): Promise<PipelineResultLine[]> {
    const bySeq = new Map<number, PipelineResultLine>();
    for (const part of await store.list(pipelineResultsKey(key))) {
      const count = await store.countLines(part);
      const lines = await store.readLines(
        part,
        Array.from({ length: count }, (_, k) => k),
      );
      // A part written twice (an activity whose answer was lost, then done again) counts once.
      for (const text of lines) {
        const line = JSON.parse(text) as PipelineResultLine;
        bySeq.set(line.seq, line);
      }
    }
    return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  }

  /**
   * What a stop left unread, with no line: the items never read (entries of a redrive's lists
   * never admitted, when the pipeline redriven was itself a redrive), each at the stage it was to
   * start at.
   */
  async function neverStarted(
    key: string,
    original: { total: number; redrive?: boolean },
    names: readonly string[],
    lines: readonly PipelineResultLine[],
  ): Promise<RedriveLine[]> {
    if (!original.redrive) {
      const read = new Set(lines.map((line) => line.origin));
      return Array.from({ length: original.total }, (_, origin) => origin)
        .filter((origin) => !read.has(origin))
        .map((origin) => ({ origin, stage: names[0] as string }));
    }
    const ended = new Set(lines.map((line) => line.seq));
    const unread: RedriveLine[] = [];
    const lists = new Set(await store.list(`${key}/redrive`));
    for (const stage of names) {
      const listKey = redriveListKey(key, stage);
      if (!lists.has(listKey)) continue;
      const count = await store.countLines(listKey);
      const entries = await store.readLines(
        listKey,
        Array.from({ length: count }, (_, k) => k),
      );
      for (const text of entries) {
        const entry = JSON.parse(text) as RedriveListEntry;
        if (!ended.has(entry.seq)) unread.push({ ...entry, stage });
      }
    }
    return unread;
  }

  return {
    /**
     * The redrive's pieces, staged: each stage's list in the store (redriveListKey), the pieces
     * whose transform runs again, and the numbers the redrive gave them (0 to reserved - 1).
     */
    async stagePipelineRedrive(input: {
      /** The pipeline redriven: its key in the store. */
      key: string;
      stages: Array<{ name: string; transform: boolean }>;
    }): Promise<{
      pipelineKey: string;
      store?: string;
      manifestKey: string;
      total: number;
      runLimit: EndpointLimit;
      statusLimit: EndpointLimit;
      /** Each stage's listed pieces, in stage order. */
      listed: number[];
      reserved: number;
      parked: RedriveParked[];
    }> {
      const { workflowId } = batchContext();
      const pipelineKey = batchKeyFor(workflowId);
      const [meta] = await store.readLines(`${input.key}/meta.jsonl`, [0]).catch(() => [undefined]);
      if (meta === undefined)
        throw badRequest('items.redrive.key', `no pipeline's data is under ${input.key} in the store`);
      const original = JSON.parse(meta) as { manifestKey: string; total: number; redrive?: boolean };
      const { manifestKey } = original;
      const names = input.stages.map((stage) => stage.name);
      const lines = await readResultLines(input.key);
      const left: RedriveLine[] = lines.filter(
        (line) => line.outcome === 'failed' || line.outcome === 'not-started',
      );
      left.push(...(await neverStarted(input.key, original, names, lines)));
      if (left.length === 0)
        throw badRequest('items.redrive.key', 'the pipeline has no failed or unstarted pieces to redrive');
      const sources = redriveSources(left, names);
      if (!sources.ok) throw badRequest('items.redrive.key', sources.rule);

      let seq = 0;
      const listed: number[] = [];
      const parked: RedriveParked[] = [];
      for (const [at, pieces] of sources.lists.entries()) {
        const stage = input.stages[at] as { name: string; transform: boolean };
        const previous = input.stages[at - 1]?.name;
        const entries: RedriveListEntry[] = [];
        for (let from = 0; from < pieces.length; from += COPIES_AT_ONCE) {
          const batch = pieces.slice(from, from + COPIES_AT_ONCE).map((piece) => ({ piece, seq: seq++ }));
          const made = await Promise.all(
            batch.map(async ({ piece, seq: number }) => {
              const id = { origin: piece.origin, ...(piece.part ? { part: piece.part } : {}) };
              // A transform's input written before: the piece runs its stage's job on it again.
              if (
                stage.transform &&
                (await copy(
                  stageInputKey(stageKeyOf(input.key, stage.name), piece.origin, piece.part),
                  stageInputKey(stageKeyOf(pipelineKey, stage.name), piece.origin, piece.part),
                ))
              )
                return { listed: true, entry: { seq: number, ...id } };
              // Else its input is made again from the previous stage's result (absent: the item).
              if (previous !== undefined && piece.was !== undefined)
                await copy(
                  stageLineKey(stageKeyOf(input.key, previous), piece.was),
                  stageLineKey(stageKeyOf(pipelineKey, previous), number),
                );
              return { listed: !stage.transform, entry: { seq: number, ...id } };
            }),
          );
          for (const { listed: inList, entry } of made)
            if (inList) entries.push(entry);
            else parked.push({ ...entry, stage: at });
          Context.current().heartbeat(seq);
        }
        if (entries.length > 0)
          await store.writeLines(
            redriveListKey(pipelineKey, stage.name),
            entries.map((entry) => JSON.stringify(entry)),
          );
        listed.push(entries.length);
      }
      // They wait in buffers, which cross continue-as-new in one payload.
      if (parked.length > MAX_PIPELINE_BUFFERED)
        throw badRequest(
          'items.redrive.key',
          `${parked.length} pieces would run their transform again; a redrive holds at most ${MAX_PIPELINE_BUFFERED}`,
        );
      // A redrive of this one reads its lists for the entries a stop left unread.
      await store.writeLines(`${pipelineKey}/meta.jsonl`, [
        JSON.stringify({ manifestKey, total: seq, redrive: true }),
      ]);
      // The limits this worker's client keeps to, as a batch's staging reads them.
      return {
        pipelineKey,
        store: store.name,
        manifestKey,
        total: seq,
        runLimit: limitInForce('run'),
        statusLimit: limitInForce('status'),
        listed,
        reserved: seq,
        parked,
      };
    },

    /** Entries `from` to `from + count` of a stage's redrive list. */
    async readPipelineRedriveList(input: {
      pipelineKey: string;
      stage: string;
      from: number;
      count: number;
    }): Promise<{ pieces: RedriveListEntry[] }> {
      const lines = await store.readLines(
        redriveListKey(input.pipelineKey, input.stage),
        Array.from({ length: input.count }, (_, k) => input.from + k),
      );
      return { pieces: lines.map((line) => JSON.parse(line) as RedriveListEntry) };
    },
  };
}
