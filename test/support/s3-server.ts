/**
 * A real S3-compatible server of a test file's own: SeaweedFS (`weed mini`, built by `npm run
 * provision` into the cache, see scripts/s3-server.ts), on free ports with its data in a
 * temporary folder, as a child process the file may kill and start again (its data stays).
 *
 * Its one identity's keys are in its environment; a client of the tests gets them explicitly
 * (`clientConfig`) or in a child's environment (`env`), never in this process's environment.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, ListBucketsCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { freePorts } from '../../scripts/prod-temporal';
import { seaweedfsBinary } from '../../scripts/s3-server';
import type { S3Location } from '../../stores/s3-client';

/** The binary, or undefined when `npm run provision` has not built it on this machine. */
export function provisionedSeaweedfs(): string | undefined {
  const explicit = process.env.SEAWEEDFS_PATH;
  if (explicit) return explicit;
  const cached = seaweedfsBinary();
  return existsSync(cached) ? cached : undefined;
}

/** Why S3 tests are skipped here (CI provisions the server, so there they always run). */
export const S3_SERVER_MISSING =
  'the S3-compatible test server (SeaweedFS) is not provisioned: run `npm run provision` (npm test does it first)';

export interface S3TestServer {
  /** http://127.0.0.1:PORT, the same across restarts. */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** A store location in `bucket` under `prefix`, path-style, at this server. */
  location(bucket: string, prefix?: string): S3Location;
  /** Client settings with this server's endpoint and keys, and few retries (a test waits on nothing). */
  clientConfig(overrides?: S3ClientConfig): S3ClientConfig;
  /** The credentials for a child process's environment. */
  env: { AWS_ACCESS_KEY_ID: string; AWS_SECRET_ACCESS_KEY: string; AWS_REGION: string };
  createBucket(bucket: string): Promise<void>;
  /** SIGKILL; its data stays for `start`. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and data; resolves once it answers. */
  start(): Promise<void>;
  /** Stops it and removes its data. */
  close(): Promise<void>;
  output(): string;
}

export async function startS3Server(name: string): Promise<S3TestServer> {
  const binary = provisionedSeaweedfs();
  if (!binary) throw new Error(S3_SERVER_MISSING);
  const dir = mkdtempSync(path.join(tmpdir(), `s3-server-${name}-`));
  const ports = await freePorts(10);
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc, admin, adminGrpc] = ports;
  const endpoint = `http://127.0.0.1:${s3}`;
  const keys = { accessKeyId: 'test-access-key', secretAccessKey: 'test-secret-key-of-the-s3-tests' };
  const args = [
    'mini',
    `-dir=${dir}`,
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-master.port=${master}`,
    `-master.port.grpc=${masterGrpc}`,
    `-volume.port=${volume}`,
    `-volume.port.grpc=${volumeGrpc}`,
    `-filer.port=${filer}`,
    `-filer.port.grpc=${filerGrpc}`,
    `-s3.port=${s3}`,
    `-s3.port.grpc=${s3Grpc}`,
    '-admin.ui=false',
    `-admin.port=${admin}`,
    `-admin.port.grpc=${adminGrpc}`,
    '-admin.port.legacy=0',
    '-webdav=false',
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    // Small volumes: a test's few megabytes do not need the default's gigabytes of preallocation.
    '-master.volumeSizeLimitMB=64',
  ];
  let child: ChildProcess | undefined;
  let output = '';
  const clientConfig = (overrides: S3ClientConfig = {}): S3ClientConfig => ({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: keys,
    maxAttempts: 2,
    ...overrides,
  });
  const client = new S3Client(clientConfig());

  async function start(): Promise<void> {
    const started = spawn(binary as string, args, {
      cwd: dir,
      env: {
        ...process.env,
        AWS_ACCESS_KEY_ID: keys.accessKeyId,
        AWS_SECRET_ACCESS_KEY: keys.secretAccessKey,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-20_000);
    };
    started.stdout?.on('data', keep);
    started.stderr?.on('data', keep);
    // Hang protection only: the filer takes a few seconds to start on a loaded machine.
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (started.exitCode !== null) throw new Error(`weed mini exited with ${started.exitCode}:\n${output}`);
      try {
        await client.send(new ListBucketsCommand({}));
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`weed mini did not answer on ${endpoint}:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  async function kill(): Promise<void> {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGKILL');
    });
  }

  await start();
  return {
    endpoint,
    ...keys,
    location: (bucket, prefix = '') => ({ kind: 's3', bucket, prefix, endpoint, forcePathStyle: true }),
    clientConfig,
    env: {
      AWS_ACCESS_KEY_ID: keys.accessKeyId,
      AWS_SECRET_ACCESS_KEY: keys.secretAccessKey,
      AWS_REGION: 'us-east-1',
    },
    async createBucket(bucket) {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
    },
    kill,
    start,
    async close() {
      await kill();
      client.destroy();
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    },
    output: () => output,
  };
}
