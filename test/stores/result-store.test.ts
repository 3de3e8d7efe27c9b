import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLocalResultStore, inlineOrStore, ResultStoreError } from '../../stores/result-store';
import { tempDir } from '../support/temp-dir';

const storeDir = () => tempDir('result-store');

describe('local result store', () => {
  it('stores and reads back a value by reference; the same key is overwritten, not copied', async () => {
    const dir = storeDir();
    const store = createLocalResultStore(dir);
    const first = await store.put('wf/with/../slashes/job-1', { a: [1, 2, 3] });
    const ref = await store.put('wf/with/../slashes/job-1', { a: [4] });
    expect(ref).toMatchObject({
      kind: 'serverless-result-ref',
      store: 'local',
      key: 'wf/with/../slashes/job-1',
      bytes: 9,
    });
    expect(first.sha256).not.toBe(ref.sha256);
    expect(await store.get(ref)).toEqual({ a: [4] });
    // One file, inside the directory, whatever the key looks like.
    expect(readdirSync(dir)).toHaveLength(1);
  });

  it('refuses a reference whose file changed or vanished', async () => {
    const dir = storeDir();
    const store = createLocalResultStore(dir);
    const ref = await store.put('k', 'value');
    const [file] = readdirSync(dir);
    writeFileSync(path.join(dir, file as string), '"tampered"');
    await expect(store.get(ref)).rejects.toBeInstanceOf(ResultStoreError);
    await expect(createLocalResultStore(storeDir()).get(ref)).rejects.toBeInstanceOf(ResultStoreError);
  });

  it('keeps small outputs inline and stores large ones', async () => {
    const store = createLocalResultStore(storeDir());
    expect(await inlineOrStore(store, 'k', { small: true }, 100)).toEqual({ output: { small: true } });
    const stored = await inlineOrStore(store, 'k', 'x'.repeat(200), 100);
    expect(stored).toHaveProperty('outputRef');
  });
});
