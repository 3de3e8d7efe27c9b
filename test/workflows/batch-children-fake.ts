/**
 * The child mode's fake children, on the test's side: the fate of each item's child, who is open
 * at once, what each child was started with, and the lines the batch wrote (the children
 * themselves are in batch-children-workflows.ts).
 */
import type { BatchActivities } from '../../activities/batch';
import type { BatchResultLine } from '../../contracts/batch-summary';
import type { ChildFate, FakeChildActivities } from './batch-children-workflows';

/** The fake children's side in the test: their fates, who is open, and the lines the batch wrote. */
export function fakeChildren(total: number, fate: (index: number) => ChildFate) {
  const open = new Set<number>();
  const started: number[] = [];
  const inputs = new Map<number, unknown>();
  const lines: BatchResultLine[] = [];
  let most = 0;
  const children: FakeChildActivities = {
    async childStarted({ index, workflowInput }) {
      open.add(index);
      started.push(index);
      inputs.set(index, workflowInput);
      most = Math.max(most, open.size);
      return fate(index);
    },
    async childEnded({ index }) {
      open.delete(index);
    },
  };
  const batch: Pick<BatchActivities, 'stageBatchItems' | 'recordBatchResults'> = {
    async stageBatchItems() {
      return { batchKey: 'batch-test', manifestKey: 'batch-test/items.jsonl', total };
    },
    async recordBatchResults({ lines: written }) {
      lines.push(...written);
    },
  };
  return { activities: { ...children, ...batch }, open, started, inputs, lines, most: () => most };
}
