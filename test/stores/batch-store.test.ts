/** The local batch store: manifests read by item index, parts replaced whole, keys kept inside it. */
import { writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { batchKeyFor, createLocalBatchStore } from '../../stores/batch-store';
import { tempDir } from '../support/temp-dir';

describe('local batch store', () => {
  const fresh = () => tempDir('batch-store');

  it('counts items and reads them by index, skipping blank lines, in the order asked', async () => {
    const dir = fresh();
    await mkdir(path.join(dir, 'in'), { recursive: true });
    writeFileSync(path.join(dir, 'in/items.jsonl'), '{"a":0}\n\n{"a":1}\r\n  \n{"a":2}\n{"a":"é3"}');
    const store = createLocalBatchStore(dir);
    expect(await store.countLines('in/items.jsonl')).toBe(4);
    expect(await store.readLines('in/items.jsonl', [1, 2, 3])).toEqual([
      '{"a":1}\r',
      '{"a":2}',
      '{"a":"é3"}',
    ]);
    expect(await store.readLines('in/items.jsonl', [3, 0])).toEqual(['{"a":"é3"}', '{"a":0}']);
    await expect(store.readLines('in/items.jsonl', [4])).rejects.toThrow(/no item 4/);
  });

  it('indexes a manifest larger than its read chunk (1 MiB): lines and blanks across chunk edges', async () => {
    const dir = fresh();
    await mkdir(path.join(dir, 'in'), { recursive: true });
    // Lines of 1,000 bytes and a blank line of spaces every 7th: edges fall inside both.
    const lines = Array.from({ length: 3_000 }, (_, k) =>
      k % 7 === 3 ? ' '.repeat(999) : `{"i":${String(k).padStart(6, '0')},"pad":"${'x'.repeat(979)}"}`,
    );
    writeFileSync(path.join(dir, 'in/big.jsonl'), lines.join('\n'));
    const items = lines.filter((line) => line.trim() !== '');
    const store = createLocalBatchStore(dir);
    expect(await store.countLines('in/big.jsonl')).toBe(items.length);
    const wanted = [0, 1_048, 1_049, items.length - 1];
    expect(await store.readLines('in/big.jsonl', wanted)).toEqual(wanted.map((k) => items[k]));
  });

  it('reads a file replaced between reads anew, small (read whole) or large (its index kept)', async () => {
    const store = createLocalBatchStore(fresh());
    await store.writeLines('p/small.jsonl', ['{"v":1}']);
    expect(await store.readLines('p/small.jsonl', [0])).toEqual(['{"v":1}']);
    await store.writeLines('p/small.jsonl', ['{"v":2}', '{"v":3}']);
    expect(await store.readLines('p/small.jsonl', [1, 0])).toEqual(['{"v":3}', '{"v":2}']);
    // Over 64 KiB the index is kept between reads, and a changed size makes it stale.
    const large = (tag: string) =>
      Array.from({ length: 100 }, (_, k) => `{"${tag}":${k},"pad":"${'y'.repeat(900)}"}`);
    await store.writeLines('p/large.jsonl', large('a'));
    expect(await store.readLines('p/large.jsonl', [99])).toEqual([large('a')[99]]);
    await store.writeLines('p/large.jsonl', [...large('bb'), '{"last":true}']);
    expect(await store.countLines('p/large.jsonl')).toBe(101);
    expect(await store.readLines('p/large.jsonl', [99, 100])).toEqual([large('bb')[99], '{"last":true}']);
    await expect(store.readLines('p/none.jsonl', [0])).rejects.toThrow(
      /p\/none.jsonl is not in the batch store/,
    );
  });

  it('replaces a part whole and lists a folder', async () => {
    const store = createLocalBatchStore(fresh());
    await store.writeLines('b/results/p1.jsonl', ['1', '2']);
    await store.writeLines('b/results/p1.jsonl', ['1', '2', '3']);
    await store.writeLines('b/results/p0.jsonl', ['0']);
    expect(await store.list('b/results')).toEqual(['b/results/p0.jsonl', 'b/results/p1.jsonl']);
    expect(await store.countLines('b/results/p1.jsonl')).toBe(3);
    expect(await store.list('b/none')).toEqual([]);
  });

  it('refuses keys that leave the store', async () => {
    const store = createLocalBatchStore(fresh());
    await expect(store.writeLines('../x.jsonl', [])).rejects.toThrow(/invalid store key/);
    await expect(store.countLines('/etc/passwd')).rejects.toThrow(/invalid store key/);
    expect(batchKeyFor('any id / with ../ characters')).toMatch(/^batch-[0-9a-f]{32}$/);
  });
});
