/** A store given by its URL, as the client and the CLI take it: the worker's S3 settings from the environment. */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../api/errors';
import { openStores, storeLocationFromUrl } from '../../stores/store-location';
import { tempDir } from '../support/temp-dir';

describe('storeLocationFromUrl', () => {
  it('takes a directory, a file URL or a bucket, with the S3 settings of the worker variables', () => {
    expect(storeLocationFromUrl('out', 'store', {}, '/srv')).toEqual({ kind: 'local', dir: '/srv/out' });
    expect(storeLocationFromUrl('file:///data/out', 'store', {})).toEqual({
      kind: 'local',
      dir: '/data/out',
    });
    // Variables meant for a bucket do not make a directory wrong.
    expect(storeLocationFromUrl('/data', 'store', { RESULT_STORE_REGION: 'eu-west-1' })).toEqual({
      kind: 'local',
      dir: '/data',
    });
    expect(
      storeLocationFromUrl('s3://renders/prod', 'store', {
        RESULT_STORE_ENDPOINT: 'http://127.0.0.1:8333',
        RESULT_STORE_PATH_STYLE: 'true',
        RESULT_STORE_REGION: '',
      }),
    ).toEqual({
      kind: 's3',
      bucket: 'renders',
      prefix: 'prod',
      endpoint: 'http://127.0.0.1:8333',
      forcePathStyle: true,
    });
  });

  it('names the setting and the rule of a bad one', () => {
    const errorOf = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return error as ConfigError;
      }
      throw new Error('expected a ConfigError');
    };
    const badUrl = errorOf(() => storeLocationFromUrl('gs://renders/prod', '--store', {}));
    expect(badUrl).toBeInstanceOf(ConfigError);
    expect(badUrl.message).toBe('--store: must be a directory, file:///dir or s3://bucket/prefix');
    const badStyle = errorOf(() =>
      storeLocationFromUrl('s3://renders/prod', 'store', { RESULT_STORE_PATH_STYLE: 'on' }),
    );
    expect(badStyle.message).toBe('RESULT_STORE_PATH_STYLE: must be true or false');
  });

  it('opens a local store named local, whose check passes', async () => {
    const stores = await openStores({ kind: 'local', dir: tempDir('store-location') });
    expect(stores.name).toBe('local');
    expect(stores.batchStore.name).toBe('local');
    await stores.check();
  });
});
