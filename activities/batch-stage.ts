/**
 * stageBatchItems: the items (inline, a manifest, the failures of an earlier batch) as a manifest
 * in the store, every line checked before anything is sent.
 */
import { Context } from '@temporalio/activity';
import { storeKeySchema } from '../contracts/batch-input';
import type { BatchResultLine } from '../contracts/batch-summary';
import type { EndpointLimit } from '../contracts/batch-types';
import { batchKeyFor } from '../stores/batch-store';
import { badRequest, requestOf } from './batch-items';
import { type BatchShared, batchContext } from './batch-shared';

export function stageActivities(shared: BatchShared) {
  const { store, limitInForce } = shared;

  async function checkLines(key: string, total: number): Promise<void> {
    const page = 1_000;
    for (let from = 0; from < total; from += page) {
      const indexes = Array.from({ length: Math.min(page, total - from) }, (_, k) => from + k);
      const lines = await store.readLines(key, indexes);
      lines.forEach((line, k) => {
        requestOf(line, from + k);
      });
      Context.current().heartbeat(from);
    }
  }

  return {
    /** The batch's manifest: checked line by line before anything is sent. */
    async stageBatchItems(input: {
      items: { inline: unknown[] } | { manifest: { key: string } } | { redrive: { key: string } };
    }): Promise<{
      batchKey: string;
      /** The store's name, for the results reference. */
      store?: string;
      manifestKey: string;
      total: number;
      runLimit?: EndpointLimit;
      statusLimit?: EndpointLimit;
    }> {
      const { workflowId } = batchContext();
      const batchKey = batchKeyFor(workflowId);
      const items = input.items;
      let manifestKey: string;
      if ('inline' in items) {
        manifestKey = `${batchKey}/items.jsonl`;
        await store.writeLines(
          manifestKey,
          items.inline.map((item) => JSON.stringify(item)),
        );
      } else if ('manifest' in items) {
        if (!storeKeySchema.safeParse(items.manifest.key).success)
          throw badRequest('items.manifest.key', 'must be a key of the batch store');
        manifestKey = items.manifest.key;
      } else {
        // The items of an earlier batch that did not complete (failed or never started), from its manifest.
        const [meta] = await store.readLines(`${items.redrive.key}/meta.jsonl`, [0]);
        const { manifestKey: source, total } = JSON.parse(meta as string) as {
          manifestKey: string;
          total: number;
        };
        const completed = new Set<number>();
        for (const part of await store.list(`${items.redrive.key}/results`)) {
          const count = await store.countLines(part);
          const lines = await store.readLines(
            part,
            Array.from({ length: count }, (_, k) => k),
          );
          for (const line of lines) completed.add((JSON.parse(line) as BatchResultLine).index);
        }
        const failed = Array.from({ length: total }, (_, k) => k).filter((k) => !completed.has(k));
        failed.sort((a, b) => a - b);
        manifestKey = `${batchKey}/items.jsonl`;
        await store.writeLines(manifestKey, failed.length === 0 ? [] : await store.readLines(source, failed));
      }
      let total: number;
      try {
        total = await store.countLines(manifestKey);
      } catch (error) {
        throw badRequest('items.manifest.key', (error as Error).message);
      }
      if (total === 0) throw badRequest('items', 'must hold at least one item');
      await checkLines(manifestKey, total);
      await store.writeLines(`${batchKey}/meta.jsonl`, [JSON.stringify({ manifestKey, total })]);
      // The limits this worker's client keeps to: the batch holds them for all its workers.
      return {
        batchKey,
        store: store.name,
        manifestKey,
        total,
        runLimit: limitInForce('run'),
        statusLimit: limitInForce('status'),
      };
    },
  };
}
