/** The watch loop behind watchBatch and watchJob, on a scripted source (no server). */
import { describe, expect, it } from 'vitest';
import { watchSnapshots } from '../../client/watch';

describe('watchSnapshots', () => {
  it('yields each change once, skips failed looks, and ends with the snapshot after the end', async () => {
    const answers: (number | Error)[] = [1, 1, new Error('not started'), 2, 2, 3];
    let looks = 0;
    const source = {
      read: async () => {
        const answer = answers[Math.min(looks, answers.length - 1)] as number | Error;
        looks += 1;
        if (answer instanceof Error) throw answer;
        return { done: answer };
      },
      // Ended once five looks were made: the sixth read is the last.
      ended: async () => looks >= 5,
    };
    const seen: number[] = [];
    for await (const snapshot of watchSnapshots(source, { interval: 0 })) seen.push(snapshot.done);
    expect(seen).toEqual([1, 2, 3]);
    expect(looks).toBe(6);
  });

  it('stops when its signal is aborted', async () => {
    const controller = new AbortController();
    const source = { read: async () => ({ at: Math.random() }), ended: async () => false };
    let count = 0;
    for await (const _ of watchSnapshots(source, { interval: 0, signal: controller.signal })) {
      count += 1;
      if (count === 3) controller.abort();
    }
    expect(count).toBe(3);
  });
});
