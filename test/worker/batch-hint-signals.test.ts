/**
 * The gathering of a batch's webhook hints into one signal (worker/batch-hint-signals.ts): per
 * batch, up to a number of hints, every caller answered with the outcome of the signal that
 * carried its hint.
 */
import { describe, expect, it } from 'vitest';
import { type BatchHint, createBatchHintSender } from '../../worker/batch-hint-signals';

const hint = (item: number): BatchHint => ({ jobId: `job-${item}`, status: 'COMPLETED', item });

describe('createBatchHintSender', () => {
  it('sends the hints of one batch given together in one signal, and each batch its own', async () => {
    const sent: Array<[string, number[]]> = [];
    const send = createBatchHintSender(async (workflowId, hints) => {
      sent.push([workflowId, hints.map((h) => h.item)]);
    });
    await Promise.all([send('batch-a', hint(1)), send('batch-b', hint(2)), send('batch-a', hint(3))]);
    expect(sent.sort()).toEqual([
      ['batch-a', [1, 3]],
      ['batch-b', [2]],
    ]);
  });

  it('starts another signal once one holds the most hints', async () => {
    const sent: number[][] = [];
    const send = createBatchHintSender(
      async (_workflowId, hints) => {
        sent.push(hints.map((h) => h.item));
      },
      { maxHints: 2 },
    );
    await Promise.all([1, 2, 3].map((item) => send('batch-a', hint(item))));
    expect(sent.sort()).toEqual([[1, 2], [3]]);
  });

  it('gives every caller of a failed signal its failure', async () => {
    const send = createBatchHintSender(async () => {
      throw new Error('temporal unavailable');
    });
    const outcomes = await Promise.allSettled([send('batch-a', hint(1)), send('batch-a', hint(2))]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
  });

  it('opens a new group after a signal went out', async () => {
    const sent: number[][] = [];
    const send = createBatchHintSender(async (_workflowId, hints) => {
      sent.push(hints.map((h) => h.item));
    });
    await send('batch-a', hint(1));
    await send('batch-a', hint(2));
    expect(sent).toEqual([[1], [2]]);
  });
});
