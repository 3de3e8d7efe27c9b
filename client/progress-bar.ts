/**
 * A batch's live progress bar (done of total, failed, in flight, rate, time left; on a route, the
 * items done on each endpoint and the moves between them) on cli-progress.
 * On a terminal it redraws one line in place; elsewhere (a pipe, a CI log) it prints a line per
 * change, so a log keeps the batch's course.
 */
import { Writable } from 'node:stream';
import { SingleBar } from 'cli-progress';
import type { BatchProgress } from '../contracts/batch-summary';
import { watchSnapshots } from './watch';

export interface BatchProgressBar {
  update(progress: BatchProgress): void;
  stop(): void;
}

const duration = (ms: number) =>
  ms >= 3_600_000
    ? `${Math.floor(ms / 3_600_000)}h${Math.round((ms % 3_600_000) / 60_000)}m`
    : ms >= 60_000
      ? `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`
      : `${Math.round(ms / 1000)}s`;

/**
 * A batch over a route: the items done on each endpoint (a drained one marked), and the moves
 * between them. Empty for a batch on one endpoint.
 */
function routeText(p: BatchProgress): string {
  const endpoints = Object.entries(p.endpoints ?? {});
  if (endpoints.length < 2) return '';
  const each = endpoints.map(
    ([endpointId, split]) =>
      `${endpointId} ${split.completed + split.failed}${split.drainedUntil === undefined ? '' : ' (drained)'}`,
  );
  return `; ${each.join(', ')}, ${p.hops ?? 0} moved`;
}

/** The bar's tokens besides value and total: cli-progress fills them into the format. */
function payloadOf(p: BatchProgress) {
  return {
    route: routeText(p),
    failed: p.done - p.counts.completed,
    inFlight: p.inFlight,
    rate: p.ratePerSecond.toFixed(1),
    left: p.etaMs !== undefined && p.done < p.total ? `, ~${duration(p.etaMs)} left` : '',
    paused: p.paused ? ' (paused)' : '',
  };
}

/**
 * `write` receives the bar's text (stderr in the CLI); `isTTY` says whether it may redraw in place.
 */
export function createBatchProgressBar(
  write: (text: string) => void,
  options: { isTTY?: boolean } = {},
): BatchProgressBar {
  let last = '';
  let repeated = false;
  const stream = Object.assign(
    new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        const text = chunk.toString();
        // Without a terminal each drawing is a line (the text, then a newline of its own): the same
        // line again (the final drawing of stop(), an update that changed nothing) says nothing new.
        if (options.isTTY === true) write(text);
        else if (text === '\n') {
          if (!repeated) write(text);
        } else {
          repeated = text === last;
          if (!repeated) write(text);
          last = text;
        }
        done();
      },
    }),
    { isTTY: options.isTTY === true },
  );
  const bar = new SingleBar({
    stream,
    format:
      '[{bar}] {value}/{total} done, {failed} failed, {inFlight} in flight, {rate}/s{left}{paused}{route}',
    barsize: 24,
    barCompleteChar: '#',
    barIncompleteChar: '.',
    hideCursor: options.isTTY === true,
    noTTYOutput: true,
    // Drawn on each update (the caller updates once a second), not on a schedule of its own.
    notTTYSchedule: 3_600_000,
    // The CLI's own handlers end the process; the bar must not hold it or swallow a signal.
    gracefulExit: false,
  });
  let started = false;
  return {
    update(progress) {
      // Before the batch has staged its items there is nothing to show.
      if (progress.total === 0) return;
      if (!started) {
        bar.start(progress.total, progress.done, payloadOf(progress));
        started = true;
        return;
      }
      bar.setTotal(progress.total);
      bar.update(progress.done, payloadOf(progress));
      // cli-progress draws on its own schedule; the caller's update is the moment to draw.
      bar.render();
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

/**
 * Draws `read()` every `everyMs` until `until` settles, then once more (a batch that ended between
 * two looks still shows where it ended: a closed workflow answers its progress query), then stops.
 * A look that fails (the workflow not started yet) is skipped.
 */
export async function followBatchProgress(
  read: () => Promise<BatchProgress>,
  bar: BatchProgressBar,
  until: Promise<unknown>,
  everyMs = 1_000,
): Promise<void> {
  let ended = false;
  const settled = until.then(
    () => undefined,
    () => undefined,
  );
  void settled.then(() => {
    ended = true;
  });
  const source = { read, ended: async () => ended, endedSignal: settled };
  try {
    for await (const progress of watchSnapshots(source, { interval: everyMs })) bar.update(progress);
  } finally {
    bar.stop();
  }
}
