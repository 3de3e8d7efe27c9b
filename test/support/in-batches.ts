/**
 * `make(0)` to `make(count - 1)`, `size` at a time (each group awaited before the next starts), in
 * index order: many workflows started or awaited without one burst of thousands of calls (tests and
 * benchmarks both use it).
 */
export async function inBatches<T>(
  count: number,
  size: number,
  make: (index: number) => Promise<T>,
): Promise<T[]> {
  const out: T[] = [];
  for (let start = 0; start < count; start += size) {
    const batch = Array.from({ length: Math.min(size, count - start) }, (_, k) => make(start + k));
    out.push(...(await Promise.all(batch)));
  }
  return out;
}
