import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../api/errors';
import {
  acceptedSecrets,
  DEFAULT_BODY_LIMIT_BYTES,
  loadGatewayConfig,
  loadWorkerConfig,
} from '../../worker/config';

const SECRET = 'webhook-secret-0123456789abcdefghijkl';
const OLD_SECRET = 'webhook-secret-old-0123456789abcdefgh';

const service = {
  SERVERLESS_API_KEY: 'api-key-do-not-print',
  SERVERLESS_API_URL: 'https://api.example.test/v2',
  SERVERLESS_GRAPHQL_URL: 'https://api.example.test/graphql',
  SERVERLESS_REST_URL: 'https://rest.example.test/v1',
};

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('worker configuration', () => {
  it('has defaults for everything but the service', () => {
    const config = loadWorkerConfig(service, '/srv/app');
    expect(config.temporal).toEqual({
      address: '127.0.0.1:7233',
      namespace: 'default',
      taskQueue: 'durable-serverless',
    });
    expect(config.webhook).toEqual({
      previousSecrets: [],
      host: '127.0.0.1',
      bodyLimitBytes: DEFAULT_BODY_LIMIT_BYTES,
    });
    expect(config.resultStoreDir).toBe(path.resolve('/srv/app', '.results'));
    expect(config.shutdownGraceMs).toBe(10_000);
    expect(config.logLevel).toBe('info');
    expect(config.service.apiKey).toBe('api-key-do-not-print');
    expect(DEFAULT_BODY_LIMIT_BYTES).toBe(16 * 1024 * 1024);
  });

  it('leaves the SDK slot settings at their defaults unless set, and reads each one', () => {
    expect(loadWorkerConfig(service).slots).toEqual({});
    const config = loadWorkerConfig({
      ...service,
      WORKER_MAX_CONCURRENT_ACTIVITIES: '250',
      WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '40',
      WORKER_MAX_CACHED_WORKFLOWS: '5000',
      WORKER_MAX_ACTIVITIES_PER_SECOND: '300',
      WORKER_MAX_TASK_QUEUE_ACTIVITIES_PER_SECOND: '200',
    });
    expect(config.slots).toEqual({
      maxConcurrentActivityTaskExecutions: 250,
      maxConcurrentWorkflowTaskExecutions: 40,
      maxCachedWorkflows: 5000,
      maxActivitiesPerSecond: 300,
      maxTaskQueueActivitiesPerSecond: 200,
    });
  });

  it('polls no extra task queue unless told, and reads a list of them', () => {
    expect(loadWorkerConfig(service).extraTaskQueues).toEqual([]);
    const config = loadWorkerConfig({
      ...service,
      TEMPORAL_TASK_QUEUE: 'gpu',
      TEMPORAL_EXTRA_TASK_QUEUES: ' interactive , ,gpu-backfill,',
    });
    expect(config.temporal.taskQueue).toBe('gpu');
    expect(config.extraTaskQueues).toEqual(['interactive', 'gpu-backfill']);
  });

  it('refuses an extra task queue named twice, the main one again, or a name too long', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ TEMPORAL_EXTRA_TASK_QUEUES: 'interactive,interactive' }, /must not name a task queue twice/],
      [
        { TEMPORAL_TASK_QUEUE: 'gpu', TEMPORAL_EXTRA_TASK_QUEUES: 'interactive,gpu' },
        /must not name TEMPORAL_TASK_QUEUE, which the worker polls already/,
      ],
      [{ TEMPORAL_EXTRA_TASK_QUEUES: 'q'.repeat(1001) }, /names of at most 1000 characters each/],
    ];
    for (const [vars, rule] of cases) {
      const error = configError(() => loadWorkerConfig({ ...service, ...vars }));
      expect(error.variable, JSON.stringify(vars)).toBe('TEMPORAL_EXTRA_TASK_QUEUES');
      expect(error.rule).toMatch(rule);
    }
  });

  it('refuses a bad slot setting, naming the variable and the rule', () => {
    const error = configError(() =>
      loadWorkerConfig({ ...service, WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '1' }),
    );
    expect(error.message).toContain('WORKER_MAX_CONCURRENT_WORKFLOW_TASKS');
    expect(error.message).toContain('must be an integer from 2 to 100000');
    const word = configError(() =>
      loadWorkerConfig({ ...service, WORKER_MAX_CONCURRENT_ACTIVITIES: 'lots' }),
    );
    expect(word.message).toContain('WORKER_MAX_CONCURRENT_ACTIVITIES');
  });

  it('reads every variable', () => {
    const config = loadWorkerConfig(
      {
        ...service,
        TEMPORAL_ADDRESS: 'temporal:7233',
        TEMPORAL_NAMESPACE: 'jobs',
        TEMPORAL_TASK_QUEUE: 'gpu',
        WEBHOOK_PUBLIC_URL: 'https://hooks.example.test/base/',
        WEBHOOK_SECRET: SECRET,
        WEBHOOK_PREVIOUS_SECRETS: ` ${OLD_SECRET} ,,`,
        WEBHOOK_PORT: '8088',
        WEBHOOK_HOST: '0.0.0.0',
        WEBHOOK_BODY_LIMIT_BYTES: '4096',
        RESULT_STORE_DIR: '/data/results',
        WORKER_SHUTDOWN_GRACE_MS: '0',
        LOG_LEVEL: 'debug',
      },
      '/srv/app',
    );
    expect(config.temporal).toEqual({ address: 'temporal:7233', namespace: 'jobs', taskQueue: 'gpu' });
    expect(config.webhook).toEqual({
      publicUrl: 'https://hooks.example.test/base',
      secret: SECRET,
      previousSecrets: [OLD_SECRET],
      port: 8088,
      host: '0.0.0.0',
      bodyLimitBytes: 4096,
    });
    expect(acceptedSecrets(config.webhook)).toEqual([SECRET, OLD_SECRET]);
    expect(config.resultStoreDir).toBe('/data/results');
    expect(config.shutdownGraceMs).toBe(0);
    expect(config.logLevel).toBe('debug');
  });

  it('treats empty variables as unset', () => {
    const config = loadWorkerConfig({
      ...service,
      WEBHOOK_PUBLIC_URL: '',
      WEBHOOK_SECRET: '',
      WEBHOOK_PORT: '',
    });
    expect(config.webhook.publicUrl).toBeUndefined();
    expect(config.webhook.port).toBeUndefined();
  });

  it('names the variable and the rule, and never prints a secret', () => {
    const cases: Array<[Record<string, string>, string, RegExp]> = [
      [
        { WEBHOOK_PUBLIC_URL: 'https://hooks.example.test' },
        'WEBHOOK_SECRET',
        /required when WEBHOOK_PUBLIC_URL/,
      ],
      [{ WEBHOOK_PORT: '8088' }, 'WEBHOOK_SECRET', /required when WEBHOOK_PORT/],
      [{ WEBHOOK_SECRET: 'short-secret-value' }, 'WEBHOOK_SECRET', /at least 32 characters/],
      [
        { WEBHOOK_SECRET: SECRET, WEBHOOK_PREVIOUS_SECRETS: `${OLD_SECRET},tiny-old-value` },
        'WEBHOOK_PREVIOUS_SECRETS',
        /each secret must be at least 32/,
      ],
      [{ WEBHOOK_PREVIOUS_SECRETS: OLD_SECRET }, 'WEBHOOK_SECRET', /required when WEBHOOK_PREVIOUS_SECRETS/],
      [
        { WEBHOOK_PUBLIC_URL: 'https://hooks.example.test/?token=leaky-value', WEBHOOK_SECRET: SECRET },
        'WEBHOOK_PUBLIC_URL',
        /without credentials, query/,
      ],
      [
        { WEBHOOK_PUBLIC_URL: 'https://user:pw-value@hooks.example.test', WEBHOOK_SECRET: SECRET },
        'WEBHOOK_PUBLIC_URL',
        /without credentials/,
      ],
      [{ WEBHOOK_PUBLIC_URL: 'not a url value' }, 'WEBHOOK_PUBLIC_URL', /http\(s\) URL/],
      [{ WEBHOOK_PORT: '70000', WEBHOOK_SECRET: SECRET }, 'WEBHOOK_PORT', /0 to 65535/],
      [{ WEBHOOK_PORT: 'eighty', WEBHOOK_SECRET: SECRET }, 'WEBHOOK_PORT', /integer port/],
      [{ WEBHOOK_BODY_LIMIT_BYTES: '12' }, 'WEBHOOK_BODY_LIMIT_BYTES', /from 1024/],
      [{ TEMPORAL_ADDRESS: 'http://temporal' }, 'TEMPORAL_ADDRESS', /host:port/],
      [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL', /must be one of/],
      [{ WORKER_SHUTDOWN_GRACE_MS: '-1' }, 'WORKER_SHUTDOWN_GRACE_MS', /integer number of milliseconds/],
    ];
    for (const [vars, variable, rule] of cases) {
      const error = configError(() => loadWorkerConfig({ ...service, ...vars }));
      expect(error.variable, JSON.stringify(vars)).toBe(variable);
      expect(error.rule).toMatch(rule);
      expect(error.message).toBe(`${variable}: ${error.rule}`);
      for (const value of [...Object.values(vars), ...Object.values(service)]) {
        expect(error.message).not.toContain(value);
      }
      for (const leak of [
        'short-secret-value',
        'tiny-old-value',
        'leaky-value',
        'pw-value',
        SECRET,
        OLD_SECRET,
      ]) {
        expect(error.message).not.toContain(leak);
      }
    }
  });

  it('passes on the api configuration errors, which name SERVERLESS_* variables', () => {
    const { SERVERLESS_API_KEY: _key, ...withoutKey } = service;
    expect(configError(() => loadWorkerConfig(withoutKey)).variable).toBe('SERVERLESS_API_KEY');
    const error = configError(() =>
      loadWorkerConfig({ ...service, SERVERLESS_API_URL: 'https://api.example.test/v1' }),
    );
    expect(error.variable).toBe('SERVERLESS_API_URL');
    expect(error.message).not.toContain(service.SERVERLESS_API_KEY);
  });
});

describe('RESULT_STORE_URL', () => {
  const load = (env: Record<string, string>) => loadWorkerConfig({ ...service, ...env }, '/srv/app');

  it('is the local directory by default, or names a directory (plain or file://) or a bucket', () => {
    expect(load({}).resultStore).toEqual({ kind: 'local', dir: '/srv/app/.results' });
    expect(load({ RESULT_STORE_URL: 'data/out' }).resultStore).toEqual({
      kind: 'local',
      dir: '/srv/app/data/out',
    });
    expect(load({ RESULT_STORE_URL: 'file:///data/out' })).toMatchObject({
      resultStore: { kind: 'local', dir: '/data/out' },
      resultStoreDir: '/data/out',
    });
    const s3 = load({
      RESULT_STORE_URL: 's3://gpu-jobs/prod/batches-v1/',
      RESULT_STORE_ENDPOINT: 'http://seaweedfs:8333',
      RESULT_STORE_REGION: 'eu-west-1',
      RESULT_STORE_PATH_STYLE: 'true',
    });
    expect(s3.resultStore).toEqual({
      kind: 's3',
      bucket: 'gpu-jobs',
      prefix: 'prod/batches-v1',
      endpoint: 'http://seaweedfs:8333',
      region: 'eu-west-1',
      forcePathStyle: true,
    });
    // Stream files stay in the local directory.
    expect(s3.resultStoreDir).toBe('/srv/app/.results');
    expect(load({ RESULT_STORE_URL: 's3://gpu-jobs' }).resultStore).toEqual({
      kind: 's3',
      bucket: 'gpu-jobs',
      prefix: '',
    });
  });

  it('names the variable and the rule of a bad setting, and never repeats the value', () => {
    const cases: Array<[Record<string, string>, string, RegExp]> = [
      [
        { RESULT_STORE_URL: 'gs://bucket/x' },
        'RESULT_STORE_URL',
        /directory, file:\/\/\/dir or s3:\/\/bucket/,
      ],
      [{ RESULT_STORE_URL: 's3://Bad_Bucket/x' }, 'RESULT_STORE_URL (bucket)', /bucket name/],
      [{ RESULT_STORE_URL: 's3://key:secret-value@bucket/x' }, 'RESULT_STORE_URL', /no credentials/],
      [{ RESULT_STORE_URL: 's3://bucket/.hidden/x' }, 'RESULT_STORE_URL (prefix)', /segments/],
      [
        { RESULT_STORE_URL: 's3://bucket/x', RESULT_STORE_ENDPOINT: 'seaweedfs:8333' },
        'RESULT_STORE_ENDPOINT',
        /http:\/\/ or https:\/\/ URL/,
      ],
      [
        { RESULT_STORE_URL: 's3://bucket/x', RESULT_STORE_PATH_STYLE: 'yes' },
        'RESULT_STORE_PATH_STYLE',
        /true or false/,
      ],
      [
        { RESULT_STORE_URL: '/data', RESULT_STORE_REGION: 'us-east-1' },
        'RESULT_STORE_REGION',
        /s3:\/\/ store only/,
      ],
      [{ RESULT_STORE_ENDPOINT: 'http://x:1' }, 'RESULT_STORE_ENDPOINT', /s3:\/\/ RESULT_STORE_URL only/],
      [{ RESULT_STORE_URL: '/data', RESULT_STORE_DIR: '/other' }, 'RESULT_STORE_URL', /not both/],
    ];
    for (const [env, variable, rule] of cases) {
      const error = configError(() => load(env));
      expect(error.variable).toBe(variable);
      expect(error.rule).toMatch(rule);
      expect(error.message).not.toContain('secret-value');
    }
  });
});

describe('SERVERLESS_RATE_LIMITS', () => {
  const load = (value: string) => loadWorkerConfig({ ...service, SERVERLESS_RATE_LIMITS: value }, '/srv');

  it("leaves the spec's limits when unset, takes false or limits per operation", () => {
    expect(loadWorkerConfig(service, '/srv')).not.toHaveProperty('rateLimits');
    expect(load('false').rateLimits).toBe(false);
    expect(load('{"run":{"perTenSeconds":5000,"concurrent":500}}').rateLimits).toEqual({
      run: { perTenSeconds: 5000, concurrent: 500 },
    });
  });

  it('names the variable and the field of a bad value', () => {
    expect(configError(() => load('fast')).message).toMatch(/^SERVERLESS_RATE_LIMITS: must be JSON/);
    expect(configError(() => load('[1]')).variable).toBe('SERVERLESS_RATE_LIMITS');
    const unknown = configError(() => load('{"runn":{"perTenSeconds":5}}'));
    expect(unknown.message).toContain('names an operation that is not one of run, runSync, status');
    const rate = configError(() => load('{"status":{"perTenSeconds":1.5}}'));
    expect(rate.variable).toBe('SERVERLESS_RATE_LIMITS.status.perTenSeconds');
    expect(rate.message).toContain('must be an integer from 1 to 1000000');
    expect(configError(() => load('{"run":{"perTenSeconds":10,"concurrent":0}}')).variable).toBe(
      'SERVERLESS_RATE_LIMITS.run.concurrent',
    );
  });
});

describe('WORKER_AUTOMATIONS_MODULE', () => {
  it('is absent unless set (empty is unset)', () => {
    expect(loadWorkerConfig(service).automationsModule).toBeUndefined();
    expect(loadWorkerConfig({ ...service, WORKER_AUTOMATIONS_MODULE: '' }).automationsModule).toBeUndefined();
  });

  it('makes a relative path absolute against the working directory, keeps the rest as given', () => {
    const read = (value: string) =>
      loadWorkerConfig({ ...service, WORKER_AUTOMATIONS_MODULE: value }, '/srv/app').automationsModule;
    expect(read('./automations.js')).toBe(path.resolve('/srv/app', 'automations.js'));
    expect(read('../shared/automations.mjs')).toBe(path.resolve('/srv', 'shared/automations.mjs'));
    expect(read('/opt/automations.cjs')).toBe('/opt/automations.cjs');
    expect(read('file:///opt/automations.mjs')).toBe('file:///opt/automations.mjs');
    expect(read('my-automations')).toBe('my-automations');
    expect(read('@acme/jobs/automations')).toBe('@acme/jobs/automations');
  });

  it.each([
    ['with spaces', 'my automations'],
    ['a leading space', ' ./automations.js'],
    ['a backslash in a package subpath', 'pkg\\automations'],
    ['a scope without a name', '@acme/'],
  ])('refuses %s, naming the variable and the rule', (_label, value) => {
    const error = configError(() => loadWorkerConfig({ ...service, WORKER_AUTOMATIONS_MODULE: value }));
    expect(error.variable).toBe('WORKER_AUTOMATIONS_MODULE');
    expect(error.rule).toMatch(/must be a path .* or a package specifier/);
  });
});

describe('standalone gateway configuration', () => {
  it('needs the secret but not the service, and listens on 8080 by default', () => {
    const config = loadGatewayConfig({ WEBHOOK_SECRET: SECRET });
    expect(config.webhook.port).toBe(8080);
    expect(config.webhook.host).toBe('127.0.0.1');
    expect(acceptedSecrets(config.webhook)).toEqual([SECRET]);
    expect('service' in config).toBe(false);
    expect(configError(() => loadGatewayConfig({})).variable).toBe('WEBHOOK_SECRET');
    expect(loadGatewayConfig({ WEBHOOK_SECRET: SECRET, WEBHOOK_PORT: '0' }).webhook.port).toBe(0);
  });
});
