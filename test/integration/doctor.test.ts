/**
 * `durable-serverless doctor` against the real stack: the shared dev server, the real worker with
 * its gateway, the emulator over HTTP. A good setup passes every check; a deliberately broken one
 * (wrong API key, no worker on the queue, a namespace without the search attributes, an
 * unreachable webhook URL, an unwritable store, an unknown endpoint) is named piece by piece, with
 * the fix, and exits 1. No secret reaches the output.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { msToTs } from '@temporalio/common/lib/time';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../client/cli';
import { type DoctorReport, runDoctor } from '../../client/doctor';
import { eventually, type JobStack, startJobStack } from '../support/integration';
import { provisionedSeaweedfs, startS3Server } from '../support/s3-server';
import { suiteTempDir } from '../support/temp-dir';
import { uniqueTaskQueue } from '../support/temporal';

let stack: JobStack;
let goodEnv: Record<string, string>;
let endpointId: string;

beforeAll(async () => {
  stack = await startJobStack({ name: 'doctor', timeScale: 1, webhooks: true });
  endpointId = stack.endpoint();
  // The gateway beside the worker is what a deployment's WEBHOOK_PUBLIC_URL leads to.
  goodEnv = { ...stack.workerEnv, WEBHOOK_PUBLIC_URL: stack.gatewayUrl! };
});
afterAll(async () => {
  await stack?.close();
});

async function cli(args: string[], env: Record<string, string>) {
  let out = '';
  let err = '';
  const code = await runCli(
    args,
    { out: (text) => (out += text), err: (text) => (err += text) },
    undefined,
    env,
  );
  return { code, out, err };
}

const verdicts = (report: DoctorReport) =>
  Object.fromEntries(report.checks.map((check) => [check.check, check.verdict]));

function expectNoSecret(text: string) {
  expect(text).not.toContain(stack.apiKey);
  expect(text).not.toContain(stack.webhookSecret!);
}

describe('doctor', () => {
  it('passes a good setup, every check named; --json prints the report and exits 0', async () => {
    const { code, out, err } = await cli(['doctor', '--json', '--endpoint', endpointId], goodEnv);
    expect(err).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(out) as DoctorReport;
    expect(verdicts(report)).toEqual({
      'worker-settings': 'pass',
      temporal: 'pass',
      namespace: 'pass',
      'search-attributes': 'pass',
      worker: 'pass',
      clock: 'pass',
      'workflow-run': 'pass',
      'service-api-key': 'pass',
      [`endpoint ${endpointId}`]: 'pass',
      webhook: 'pass',
      store: 'pass',
    });
    expect(report.ok).toBe(true);
    expect(report.connection).toMatchObject({
      namespace: 'default',
      taskQueue: stack.taskQueue,
      profile: 'default',
      sources: { address: 'TEMPORAL_ADDRESS' },
    });
    expectNoSecret(out);
  });

  it('names each broken piece with its fix, exits 1, and prints no secret', async () => {
    const dir = suiteTempDir('doctor-broken');
    const notADirectory = path.join(dir, 'a-file');
    writeFileSync(notADirectory, 'in the way');
    const broken = {
      ...goodEnv,
      SERVERLESS_API_KEY: `sk-wrong-${randomUUID()}`,
      TEMPORAL_TASK_QUEUE: uniqueTaskQueue('doctor-nobody'),
      WEBHOOK_PUBLIC_URL: 'http://127.0.0.1:9',
      RESULT_STORE_DIR: path.join(notADirectory, 'results'),
    };
    const { code, out } = await cli(['doctor'], broken);
    expect(code).toBe(1);
    const lines = out.split('\n');
    const line = (check: string) => lines.find((text) => text.includes(`  ${check} `)) ?? '';
    expect(line('service-api-key')).toMatch(/^FAIL .*refused SERVERLESS_API_KEY \(401\)/);
    expect(line('worker')).toMatch(/^FAIL .*no worker polls .*doctor-nobody/);
    expect(line('webhook')).toMatch(/^FAIL .*127\.0\.0\.1:9 is not reachable/);
    expect(line('store')).toMatch(/^FAIL .*ENOTDIR/);
    expect(line('workflow-run')).toMatch(/^skip/);
    expect(line('temporal')).toMatch(/^ok/);
    expect(out).toContain('fix: set SERVERLESS_API_KEY');
    expect(out).toContain('fix: start the worker (durable-serverless-worker) with TEMPORAL_TASK_QUEUE=');
    expect(out).toMatch(/4 check\(s\) failed/);
    expectNoSecret(out);
    expect(out).not.toContain(broken.SERVERLESS_API_KEY);
  });

  it('an unknown endpoint fails its own check only', async () => {
    const report = await runDoctor({ env: goodEnv, endpoints: ['no-such-endpoint'] });
    expect(verdicts(report)['endpoint no-such-endpoint']).toBe('fail');
    expect(report.checks.find((check) => check.check === 'endpoint no-such-endpoint')?.detail).toMatch(
      /no endpoint "no-such-endpoint"/,
    );
    expect(report.ok).toBe(false);
  });

  it('a namespace without the search attributes: each one named, with the command that registers it', async () => {
    const namespace = `doctor-${randomUUID().slice(0, 8)}`;
    await stack.client.connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
    // A new namespace reaches the frontend's cache a moment later.
    const report = await eventually(async () => {
      const candidate = await runDoctor({ env: { ...goodEnv, TEMPORAL_NAMESPACE: namespace } });
      return verdicts(candidate).namespace === 'pass' ? candidate : undefined;
    }, 60_000);
    const attributes = report.checks.find((check) => check.check === 'search-attributes')!;
    expect(attributes.verdict).toBe('fail');
    expect(attributes.detail).toMatch(/not registered: .*ServerlessEndpointId/);
    expect(attributes.fix).toContain(
      `temporal operator search-attribute create --namespace ${namespace} --name ServerlessJobId --type KeywordList`,
    );
    expect(verdicts(report).worker).toBe('fail');
  });

  it("without the worker's settings: that is named, and what needs them is skipped, not left out", async () => {
    const { SERVERLESS_API_KEY: _key, ...withoutKey } = goodEnv;
    const report = await runDoctor({ env: withoutKey, endpoints: [endpointId] });
    expect(report.checks.find((check) => check.check === 'worker-settings')).toMatchObject({
      verdict: 'fail',
      detail: expect.stringMatching(/^SERVERLESS_API_KEY: /),
    });
    expect(verdicts(report)).toMatchObject({
      temporal: 'pass',
      'service-api-key': 'skip',
      [`endpoint ${endpointId}`]: 'skip',
      webhook: 'skip',
      store: 'skip',
    });
  });

  it('Temporal unreachable: the Temporal checks say so, the others still run', async () => {
    const report = await runDoctor({ env: { ...goodEnv, TEMPORAL_ADDRESS: '127.0.0.1:9' } });
    expect(verdicts(report)).toMatchObject({
      temporal: 'fail',
      namespace: 'skip',
      worker: 'skip',
      'service-api-key': 'pass',
      store: 'pass',
    });
  });

  it.skipIf(provisionedSeaweedfs() === undefined)(
    'an S3 result store: a bucket it can write passes, a missing bucket is named',
    async () => {
      const server = await startS3Server('doctor');
      try {
        await server.createBucket('doctor-results');
        const { RESULT_STORE_DIR: _dir, ...rest } = goodEnv;
        const s3Env = (bucket: string) => ({
          ...rest,
          RESULT_STORE_URL: `s3://${bucket}/runs`,
          RESULT_STORE_ENDPOINT: server.endpoint,
          RESULT_STORE_REGION: 'us-east-1',
          RESULT_STORE_PATH_STYLE: 'true',
        });
        const storeOptions = { clientConfig: server.clientConfig() };
        const good = await runDoctor({ env: s3Env('doctor-results'), storeOptions });
        expect(good.checks.find((check) => check.check === 'store')).toMatchObject({
          verdict: 'pass',
          detail: 's3://doctor-results/runs is readable and writable',
        });
        const missing = await runDoctor({ env: s3Env('no-such-bucket'), storeOptions });
        const store = missing.checks.find((check) => check.check === 'store')!;
        expect(store.verdict).toBe('fail');
        expect(store.detail).toMatch(
          /^s3:\/\/no-such-bucket\/runs is not readable and writable: .*no-such-bucket/,
        );
        expect(JSON.stringify(missing)).not.toContain(server.secretAccessKey);
      } finally {
        await server.close();
      }
    },
    120_000,
  );
});
