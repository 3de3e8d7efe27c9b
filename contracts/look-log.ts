/**
 * The looks at /status a batch's watcher made in the service's last window, counted by second, as
 * they cross history. A watcher that ends hands its window to the batch, and the next watchers on
 * the endpoint take it over up to their shares (engine/look-shares.ts): a handoff does not start
 * a window afresh while the service still counts the last watcher's looks, in whichever worker
 * process the next one runs. Each count names the client that made the looks (`source`): a
 * watcher in the same process counts them already, in the client's own limiter.
 */

/** [second since the epoch, looks in it, the client that made them], oldest first. */
export type LookLog = Array<[second: number, looks: number, source: string]>;

/** The service counts an endpoint's requests of one operation in any window this long. */
const WINDOW_MS = 10_000;

/** Whether a second's looks still count in the window that ends at `now`. */
function inWindow(second: number, now: number): boolean {
  return second * 1_000 + 999 > now - WINDOW_MS;
}

/** The looks one client made at these times (ms since the epoch), by second. */
export function lookLogOf(times: readonly number[], source: string): LookLog {
  const bySecond = new Map<number, number>();
  for (const at of times) {
    const second = Math.floor(at / 1_000);
    bySecond.set(second, (bySecond.get(second) ?? 0) + 1);
  }
  return [...bySecond].sort((a, b) => a[0] - b[0]).map(([second, looks]) => [second, looks, source]);
}

/**
 * The times a watcher's limiter is seeded with: each look at the end of its second, the latest it
 * may have been, so that it leaves the window no earlier than the service lets it.
 *
 * `own` names the seeding watcher's client, and `sources` how many clients handed looks back to
 * the batch lately. With one client (the batch runs on one process), its own looks are left out: that client's
 * limiter counts them already, with every other look of its process, and shares the limit among
 * the watchers as their looks come (a share of the window each would leave room unused). Once
 * several clients look, every look taken over counts against the watcher's share: there the
 * shares are what holds the limit across the processes.
 */
export function lookTimes(log: LookLog, own?: string, sources = 1): number[] {
  const counted = own === undefined || sources > 1 ? log : log.filter(([, , source]) => source !== own);
  return counted.flatMap(([second, looks]) => Array.from({ length: looks }, () => second * 1_000 + 999));
}

/** The looks of the log within the window that ends at `now`. */
export function looksInWindow(log: LookLog, now: number): number {
  let looks = 0;
  for (const [second, count] of log) if (inWindow(second, now)) looks += count;
  return looks;
}

/** Adds a watcher's window to the pool, which keeps only what still counts at `now`. */
export function poolLooks(pool: LookLog, looks: LookLog, now: number): void {
  const merged = new Map<string, [number, number, string]>();
  for (const [second, count, source] of [...pool, ...looks]) {
    if (!inWindow(second, now) || count <= 0) continue;
    const key = `${second} ${source}`;
    const entry = merged.get(key);
    if (entry) entry[1] += count;
    else merged.set(key, [second, count, source]);
  }
  const kept = [...merged.values()].sort((a, b) => a[0] - b[0] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0));
  pool.splice(0, pool.length, ...kept);
}

/**
 * Takes up to `share` looks out of the pool, the newest first (they count the longest): the window
 * a watcher with that share starts from. What a watcher takes is at most its share, so its own looks
 * and the ones it took stay within it, and the pool keeps the rest for the next watchers.
 */
export function takeLooks(pool: LookLog, share: number, now: number): LookLog {
  poolLooks(pool, [], now);
  const taken: LookLog = [];
  let wanted = Math.max(0, Math.floor(share));
  for (let k = pool.length - 1; k >= 0 && wanted > 0; k--) {
    const bin = pool[k] as [number, number, string];
    const part = Math.min(bin[1], wanted);
    bin[1] -= part;
    wanted -= part;
    taken.unshift([bin[0], part, bin[2]]);
  }
  poolLooks(pool, [], now);
  return taken;
}
