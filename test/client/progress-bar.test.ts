/**
 * The batch progress bar without a terminal (a line per update, no escape codes) and on one
 * (redrawn in place).
 */
import { describe, expect, it } from 'vitest';
import { createBatchProgressBar, followBatchProgress } from '../../client/progress-bar';
import type { BatchProgress } from '../../contracts/batch-summary';

/** The start of an ANSI control sequence (cursor moves, line clears). */
const ESCAPE = '\u001b[';

const progress = (done: number, completed: number, extra: Partial<BatchProgress> = {}): BatchProgress =>
  ({
    total: 200,
    done,
    counts: { completed },
    inFlight: 40,
    ratePerSecond: 12.5,
    etaMs: 90_000,
    paused: false,
    ...extra,
  }) as BatchProgress;

describe('batch progress bar', () => {
  it('prints a line per change without a terminal: bar, done of total, failed, in flight, rate, time left', () => {
    let text = '';
    const bar = createBatchProgressBar((chunk) => {
      text += chunk;
    });
    bar.update(progress(0, 0, { total: 0 }));
    bar.update(progress(50, 48));
    bar.update(progress(50, 48));
    bar.update(progress(100, 97, { paused: true }));
    bar.update(progress(200, 196, { inFlight: 0, etaMs: 0 }));
    bar.stop();
    const lines = text.split('\n').slice(0, -1);
    // Nothing before the items are staged; a line per change, none repeated (stop draws the last again).
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe(
      '[######..................] 50/200 done, 2 failed, 40 in flight, 12.5/s, ~1m30s left',
    );
    expect(lines).toContain(
      '[############............] 100/200 done, 3 failed, 40 in flight, 12.5/s, ~1m30s left (paused)',
    );
    // Finished: no time left shown; the last line is where the batch ended.
    expect(lines.at(-1)).toBe('[########################] 200/200 done, 4 failed, 0 in flight, 12.5/s');
    expect(text).not.toContain(ESCAPE);
  });

  it('on a route, shows the items done on each endpoint, a drained one, and the moves', () => {
    let text = '';
    const bar = createBatchProgressBar((chunk) => {
      text += chunk;
    });
    bar.update(
      progress(50, 48, {
        hops: 7,
        endpoints: {
          'ep-a': { completed: 30, failed: 1, moved: 7 },
          'ep-b': { completed: 18, failed: 1, moved: 0, drainedUntil: 1_000 },
        },
      }),
    );
    // One endpoint: nothing more than without a route.
    bar.update(progress(60, 58, { endpoints: { 'ep-a': { completed: 58, failed: 2, moved: 0 } } }));
    bar.stop();
    const lines = text.split('\n').slice(0, -1);
    expect(lines[0]).toBe(
      '[######..................] 50/200 done, 2 failed, 40 in flight, 12.5/s, ~1m30s left; ep-a 31, ep-b 19 (drained), 7 moved',
    );
    expect(lines[1]).toBe(
      '[#######.................] 60/200 done, 2 failed, 40 in flight, 12.5/s, ~1m30s left',
    );
  });

  it('redraws one line in place on a terminal', () => {
    let text = '';
    const bar = createBatchProgressBar(
      (chunk) => {
        text += chunk;
      },
      { isTTY: true },
    );
    bar.update(progress(10, 10));
    bar.update(progress(20, 19));
    bar.stop();
    expect(text).toContain('20/200 done, 1 failed');
    // Cursor moves instead of new lines between the updates.
    expect(text).toContain(ESCAPE);
    expect(text.split('\n').filter((line) => line.includes('done,')).length).toBe(1);
  });

  it('follows a batch until it ends, skips a failed look, draws where it ended, then stops', async () => {
    let text = '';
    const bar = createBatchProgressBar((chunk) => {
      text += chunk;
    });
    let looks = 0;
    let end!: () => void;
    const until = new Promise<void>((resolve) => {
      end = resolve;
    });
    const read = async () => {
      looks += 1;
      if (looks === 1) throw new Error('not started yet');
      // The batch ends while the third look is answered: one more look shows the end.
      if (looks === 3) end();
      return looks >= 3 ? progress(200, 199, { inFlight: 0 }) : progress(looks * 10, looks * 10);
    };
    await followBatchProgress(read, bar, until, 1);
    const lines = text.split('\n').slice(0, -1);
    expect(lines[0]).toContain('20/200 done, 0 failed');
    expect(lines.at(-1)).toContain('200/200 done, 1 failed, 0 in flight');
    expect(looks).toBe(4);
  });
});
