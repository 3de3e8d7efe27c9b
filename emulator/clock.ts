import { performance } from 'node:perf_hooks';

/**
 * Service time: real time multiplied by the time scale, plus whatever `advance` added. Every timer
 * of the emulator lives in one min-heap on this clock, so:
 * - events fire in service-time order even when the process is late (a large scale turns 1 ms of
 *   event-loop lag into seconds of service time);
 * - while a timer callback runs, `now()` is the time it was due, so reported durations
 *   (delayTime, executionTime, webhook spacing) are exact and do not depend on the machine's speed;
 * - `close()` clears everything at once and only one real `setTimeout` is ever armed.
 */
export interface Clock {
  readonly timeScale: number;
  now(): number;
  at(time: number, fn: () => void): TimerHandle;
  after(ms: number, fn: () => void): TimerHandle;
  cancel(handle: TimerHandle | undefined): void;
  /** Fires every timer already due; request handlers call it first so they see a consistent state. */
  runDue(): void;
  /** Moves service time forward (tests); fires what becomes due. */
  advance(ms: number): void;
  /**
   * Stops service time from following real time (tests): from now on only `advance` moves it, so
   * nothing happens between two steps of a test however slow the machine is. Timers already due
   * still fire. Idempotent.
   */
  freeze(): void;
  /** Lets service time follow real time again, at the time scale, from where it stands. Idempotent. */
  resume(): void;
  readonly frozen: boolean;
  /** Number of live timers. */
  pending(): number;
  close(): void;
}

export interface TimerHandle {
  readonly at: number;
}

interface Entry extends TimerHandle {
  readonly at: number;
  readonly seq: number;
  fn: (() => void) | null;
}

// setTimeout's ceiling; longer waits re-arm when they wake.
const MAX_REAL_DELAY_MS = 2 ** 31 - 1;
// Cancelled entries stay in the heap until they surface; rebuild when they dominate.
const COMPACT_THRESHOLD = 4096;

export function createClock(
  timeScale: number,
  onError: (error: unknown) => void = (error) => console.error('emulator timer failed', error),
): Clock {
  if (!(timeScale > 0) || !Number.isFinite(timeScale))
    throw new RangeError('timeScale must be a positive number');
  // Service time = base + (real time since baseReal) x timeScale, or just base while frozen.
  let base = Date.now();
  let baseReal = performance.now();
  let frozen = false;
  let virtualNow: number | undefined;
  let heap: Entry[] = [];
  let seq = 0;
  let live = 0;
  let cancelled = 0;
  let closed = false;
  let running = false;
  let timeout: NodeJS.Timeout | undefined;
  let armedFor = Number.POSITIVE_INFINITY;

  // Outside timer callbacks, `now()` stands still for the rest of the synchronous task: with a large
  // scale, the microseconds one request takes to handle would otherwise be whole seconds of service
  // time between two readings in the same operation.
  let taskNow: number | undefined;
  const realNow = () => (frozen ? base : base + (performance.now() - baseReal) * timeScale);
  const now = () => {
    if (virtualNow !== undefined) return virtualNow;
    if (taskNow === undefined) {
      taskNow = realNow();
      queueMicrotask(() => {
        taskNow = undefined;
      });
    }
    return taskNow;
  };

  const before = (a: Entry, b: Entry) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

  function push(entry: Entry) {
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  function siftDown(i: number) {
    const n = heap.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && before(heap[l]!, heap[m]!)) m = l;
      if (r < n && before(heap[r]!, heap[m]!)) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  }

  function pop(): Entry | undefined {
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      siftDown(0);
    }
    return top;
  }

  function dropCancelledTop() {
    while (heap.length > 0 && heap[0]!.fn === null) {
      pop();
      cancelled--;
    }
  }

  function compact() {
    heap = heap.filter((e) => e.fn !== null);
    cancelled = 0;
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftDown(i);
  }

  function arm() {
    if (closed || running) return;
    dropCancelledTop();
    const top = heap[0];
    if (!top) {
      disarm();
      return;
    }
    if (timeout && armedFor === top.at) return;
    disarm();
    const ahead = top.at - realNow();
    // Frozen, a timer in the future waits for advance(); only one already due is armed.
    if (frozen && ahead > 0) return;
    const delay = Math.min(MAX_REAL_DELAY_MS, Math.max(0, Math.ceil(ahead / timeScale)));
    armedFor = top.at;
    timeout = setTimeout(onTimeout, delay);
    // The HTTP server keeps the process alive while the emulator runs; the clock never should.
    timeout.unref();
  }

  function disarm() {
    if (timeout) clearTimeout(timeout);
    timeout = undefined;
    armedFor = Number.POSITIVE_INFINITY;
  }

  function onTimeout() {
    timeout = undefined;
    armedFor = Number.POSITIVE_INFINITY;
    runDue();
  }

  function runDue() {
    if (closed || running) return;
    running = true;
    const limit = now();
    try {
      while (heap.length > 0 && heap[0]!.at <= limit) {
        const entry = pop()!;
        const fn = entry.fn;
        if (fn === null) {
          cancelled--;
          continue;
        }
        entry.fn = null;
        live--;
        virtualNow = entry.at;
        try {
          fn();
        } catch (error) {
          onError(error);
        }
        if (closed) return;
      }
    } finally {
      virtualNow = undefined;
      running = false;
    }
    arm();
  }

  function at(time: number, fn: () => void): TimerHandle {
    const entry: Entry = { at: time, seq: seq++, fn };
    if (closed) {
      entry.fn = null;
      return entry;
    }
    push(entry);
    live++;
    if (time < armedFor) arm();
    return entry;
  }

  return {
    timeScale,
    get frozen() {
      return frozen;
    },
    now,
    at,
    after: (ms, fn) => at(now() + Math.max(0, ms), fn),
    cancel(handle) {
      const entry = handle as Entry | undefined;
      if (!entry || entry.fn === null) return;
      entry.fn = null;
      live--;
      cancelled++;
      if (cancelled > COMPACT_THRESHOLD && cancelled > live) compact();
    },
    runDue,
    advance(ms) {
      if (!(ms >= 0)) throw new RangeError('advance takes a non-negative number of milliseconds');
      base += ms;
      taskNow = undefined;
      runDue();
    },
    freeze() {
      if (frozen) return;
      base = realNow();
      frozen = true;
      taskNow = undefined;
      disarm();
      arm();
    },
    resume() {
      if (!frozen) return;
      baseReal = performance.now();
      frozen = false;
      taskNow = undefined;
      arm();
    },
    pending: () => live,
    close() {
      closed = true;
      disarm();
      heap = [];
      live = 0;
      cancelled = 0;
    },
  };
}
