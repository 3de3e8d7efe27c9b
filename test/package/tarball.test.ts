/**
 * The package as a user gets it: `npm pack`, then the tarball installed into a fresh project
 * with no TypeScript tooling of its own. Every entry point loads with `require` and with `import`
 * (ESM consumers get the CommonJS modules' named exports through Node's interop), the types
 * resolve for `tsc` under nodenext (CommonJS and ESM files) and node10, the CLI answers from its
 * bin, and a worker started from the installed bin (prebuilt workflow bundle) runs a job against
 * the emulator, started and inspected with the installed CLI against the dev server.
 *
 * It needs dist/: CI runs `npm run build` first; a stale or missing dist/ is rebuilt here.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Emulator, startEmulator } from '../../emulator';
import { ensureBuilt } from '../support/built';
import { eventually } from '../support/integration';

const run = promisify(execFile);
const repoRoot = path.resolve(__dirname, '../..');
/** The subpath entry points, beside the root (`durable-serverless`). */
const SUBPATHS = ['api', 'worker', 'emulator', 'workflows'] as const;
/** Every entry point as a consumer names it. */
const ENTRY_POINTS = ['durable-serverless', ...SUBPATHS.map((entry) => `durable-serverless/${entry}`)];
interface PackResult {
  filename: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
  files: Array<{ path: string; size: number }>;
}

/** A clean environment for the consumer's processes: nothing of vitest's or the repo's. */
function consumerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'npm_config_cache', 'NPM_CONFIG_CACHE', 'npm_config_registry'];
  const env: NodeJS.ProcessEnv = {};
  for (const name of keep) if (process.env[name]) env[name] = process.env[name];
  return { ...env, ...extra };
}

describe('the npm package, installed from its tarball', () => {
  let work: string;
  let consumer: string;
  let pack: PackResult;

  beforeAll(async () => {
    await ensureBuilt('tarball');
    work = mkdtempSync(path.join(tmpdir(), 'package-test-'));
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
      cwd: repoRoot,
      env: consumerEnv(),
      maxBuffer: 16 << 20,
    });
    pack = (JSON.parse(packed.stdout) as PackResult[])[0]!;
    consumer = path.join(work, 'consumer');
    await run('mkdir', ['-p', consumer]);
    writeFileSync(
      path.join(consumer, 'package.json'),
      JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }),
    );
    // One install, from the npm cache where it can (its dependencies are the repo's).
    await run(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', path.join(work, pack.filename)],
      { cwd: consumer, env: consumerEnv(), maxBuffer: 16 << 20 },
    );
  }, 600_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('holds dist/, the README, the changelog, the licence and package.json, and nothing else', () => {
    const paths = pack.files.map((file) => file.path).sort();
    const outside = paths.filter(
      (name) =>
        !/^dist\/.+\.(js|d\.ts)$/.test(name) &&
        !['README.md', 'CHANGELOG.md', 'LICENSE', 'package.json'].includes(name),
    );
    expect(outside).toEqual([]);
    expect(paths).toEqual(
      expect.arrayContaining([
        'README.md',
        'CHANGELOG.md',
        'LICENSE',
        'package.json',
        'dist/workflow-bundle.js',
      ]),
    );
    expect(paths.filter((name) => /test|bench|fixture|\.ts$/.test(name.replace(/\.d\.ts$/, '')))).toEqual([]);
    for (const entry of ['', ...SUBPATHS.map((subpath) => `${subpath}/`)]) {
      expect(paths).toContain(`dist/${entry}index.js`);
      expect(paths).toContain(`dist/${entry}index.d.ts`);
    }
    console.log(
      `[tarball] ${pack.filename}: ${(pack.size / 1024).toFixed(0)} KiB packed, ` +
        `${(pack.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${pack.entryCount} files`,
    );
  });

  it('every entry point loads with require and with import, with the same named exports', async () => {
    const script = path.join(consumer, 'load.mjs');
    writeFileSync(
      script,
      `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const out = {};
for (const entry of ${JSON.stringify(ENTRY_POINTS)}) {
  const cjs = require(entry);
  const esm = await import(entry);
  out[entry] = { cjs: Object.keys(cjs).sort(), esm: Object.keys(esm).filter((k) => !['default', 'module.exports', '__esModule'].includes(k)).sort() };
}
const { startJob, startBatch, scheduleBatch, sendEvent, connectTemporalClient } = await import('durable-serverless');
out.named = [startJob, startBatch, scheduleBatch, sendEvent, connectTemporalClient].map((value) => typeof value);
console.log(JSON.stringify(out));
`,
    );
    const { stdout } = await run(process.execPath, [script], { cwd: consumer, env: consumerEnv() });
    const loaded = JSON.parse(stdout) as Record<string, { cjs: string[]; esm: string[] }> & {
      named: string[];
    };
    for (const entry of ENTRY_POINTS) {
      expect(loaded[entry]!.cjs.length, entry).toBeGreaterThan(2);
      expect(loaded[entry]!.esm, entry).toEqual(loaded[entry]!.cjs);
    }
    const root = loaded['durable-serverless']!.cjs;
    expect(root).toEqual(
      expect.arrayContaining([
        'startJob',
        'awaitJob',
        'startBatch',
        'scheduleBatch',
        'sendEvent',
        'runWorker',
        'loadWorkerConfig',
        'connectTemporalClient',
        'ValidationError',
      ]),
    );
    // Helpers stay internal: the root lists its names, it does not re-export modules whole.
    for (const internal of ['busyPauseMs', 'cronProblem', 'matchesAnySecret', 'checkSchedule'])
      expect(root, internal).not.toContain(internal);
    expect(loaded['durable-serverless/worker']!.cjs).toEqual(
      expect.arrayContaining(['runWorker', 'loadWorkerConfig', 'startWebhookGateway']),
    );
    expect(loaded.named).toEqual(['function', 'function', 'function', 'function', 'function']);
    // tsx stays a development tool: the installed tree has none.
    expect(existsSync(path.join(consumer, 'node_modules', 'tsx'))).toBe(false);
  });

  it('its types resolve for tsc: nodenext (a .cts and an .mts file) and node10', async () => {
    const usage = `import { createServiceClient, type JobStatusValue } from 'durable-serverless/api';
import { startJob, startBatch, scheduleBatch, sendEvent, connectTemporalClient, runWorker, loadWorkerConfig,
  type TemporalConnectionConfig, type WorkerConfig } from 'durable-serverless';
import { startWebhookGateway } from 'durable-serverless/worker';
import { startEmulator, type Emulator } from 'durable-serverless/emulator';
import { serverlessJob } from 'durable-serverless/workflows';
export const config: TemporalConnectionConfig = { address: 'temporal:7233', namespace: 'default' };
// @ts-expect-error: an address is a string (this line fails if the types fell back to any)
export const wrong: TemporalConnectionConfig = { address: 7233, namespace: 'default' };
export async function use(env: NodeJS.ProcessEnv): Promise<string> {
  const client = await connectTemporalClient({ apiKey: 'k' });
  const handle = await startJob(client, { endpointId: 'e', request: { input: {} } }, { workflowId: 'w' });
  const worker: WorkerConfig = loadWorkerConfig(env);
  const emulator: Emulator = await startEmulator();
  // @ts-expect-error: runWorker wants a WorkerConfig
  await runWorker({});
  const status: JobStatusValue = 'COMPLETED';
  return [handle.workflowId, worker.temporal.address, emulator.apiUrl, status, typeof createServiceClient,
    typeof startBatch, typeof scheduleBatch, typeof sendEvent, typeof startWebhookGateway, typeof serverlessJob,
    typeof runWorker].join();
}
`;
    writeFileSync(path.join(consumer, 'usage.cts'), usage);
    writeFileSync(path.join(consumer, 'usage.mts'), usage);
    writeFileSync(path.join(consumer, 'usage.ts'), usage);
    const common = {
      target: 'ES2022',
      strict: true,
      noEmit: true,
      // Temporal's own declarations import 'ms', whose canary lacks types for nodenext.
      skipLibCheck: true,
      types: ['node'],
      typeRoots: [path.join(repoRoot, 'node_modules', '@types')],
    };
    const tsconfig = (name: string, options: Record<string, unknown>, files: string[]) => {
      writeFileSync(
        path.join(consumer, name),
        JSON.stringify({ compilerOptions: { ...common, ...options }, files }),
      );
      return name;
    };
    const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const projects = [
      tsconfig('tsconfig.nodenext.json', { module: 'nodenext', moduleResolution: 'nodenext' }, [
        'usage.cts',
        'usage.mts',
      ]),
      tsconfig(
        'tsconfig.node10.json',
        { module: 'commonjs', moduleResolution: 'node10', esModuleInterop: true, ignoreDeprecations: '5.0' },
        ['usage.ts'],
      ),
    ];
    const results = await Promise.all(
      projects.map((project) =>
        run(process.execPath, [tsc, '-p', project], { cwd: consumer, env: consumerEnv() }).then(
          () => ({ project, output: '' }),
          (error: { stdout?: string }) => ({ project, output: error.stdout ?? String(error) }),
        ),
      ),
    );
    expect(results).toEqual(projects.map((project) => ({ project, output: '' })));
  }, 180_000);

  it('npx durable-serverless --help, and the emulator bin', async () => {
    const help = await run('npx', ['durable-serverless', '--help'], {
      cwd: consumer,
      env: consumerEnv(),
    });
    expect(help.stdout).toContain('Usage: durable-serverless');
    expect(help.stdout).toContain('--tls-client-cert');
    expect(help.stdout).toMatch(/job\b/);
    const emulator = await run('npx', ['durable-serverless-emulator', '--help'], {
      cwd: consumer,
      env: consumerEnv(),
    });
    expect(emulator.stdout).toContain('--time-scale');
  });

  describe('against the dev server and the emulator', () => {
    let emulator: Emulator;
    let worker: ChildProcess | undefined;
    let workerOutput = '';
    const apiKey = `sk-package-${randomUUID()}`;
    const taskQueue = `package-${randomUUID()}`;
    const address = () => inject('temporalAddress');

    /** The installed CLI, through npx as a user runs it. */
    async function cli(...args: string[]) {
      const { stdout } = await run(
        'npx',
        ['durable-serverless', '--address', address(), '--task-queue', taskQueue, ...args],
        { cwd: consumer, env: consumerEnv() },
      );
      return JSON.parse(stdout) as Record<string, unknown>;
    }

    beforeAll(async () => {
      emulator = await startEmulator({ accounts: [{ apiKey }], timeScale: 50 });
    });
    afterAll(async () => {
      if (worker && worker.exitCode === null) worker.kill('SIGKILL');
      await emulator?.close();
    });

    it('a worker from the installed bin (prebuilt bundle) runs a job the installed CLI starts and inspects', async () => {
      const endpoint = emulator.control.createEndpoint(apiKey, {
        name: 'package-echo',
        templateId: 'echo',
        flashBootType: 'FLASHBOOT',
      }).id;
      const started = Date.now();
      worker = spawn(path.join(consumer, 'node_modules', '.bin', 'durable-serverless-worker'), [], {
        cwd: consumer,
        env: consumerEnv({
          TEMPORAL_ADDRESS: address(),
          TEMPORAL_TASK_QUEUE: taskQueue,
          SERVERLESS_API_KEY: apiKey,
          SERVERLESS_API_URL: emulator.apiUrl,
          SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
          SERVERLESS_REST_URL: emulator.restUrl,
          // Any free port: the worker's 'worker running' line says which.
          WORKER_HEALTH_PORT: '0',
          WORKER_SHUTDOWN_GRACE_MS: '500',
        }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const child = worker;
      child.stdout?.on('data', (chunk: Buffer) => {
        workerOutput += chunk.toString();
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        workerOutput += chunk.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      const running = await eventually(
        () => workerOutput.split('\n').find((line) => line.includes('worker running')),
        60_000,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; worker output:\n${workerOutput}`);
      });
      console.log(`[tarball] installed worker running after ${Date.now() - started} ms`);
      const line = JSON.parse(running) as { health?: string };
      expect(line).toMatchObject({ workflows: 'prebuilt bundle', taskQueue });
      const ready = await request(`${line.health}/readyz`);
      expect(ready.statusCode).toBe(200);
      await ready.body.dump();

      const workflowId = `package-job-${randomUUID()}`;
      const result = await cli(
        'job',
        'start',
        workflowId,
        '--endpoint',
        endpoint,
        '--input',
        '{"prompt":"from the tarball"}',
        '--wait',
      );
      expect(result).toMatchObject({ status: 'COMPLETED', output: { prompt: 'from the tarball' } });
      expect(emulator.control.job(String(result.jobId))?.status).toBe('COMPLETED');
      expect(await cli('job', 'status', workflowId)).toMatchObject({
        status: 'COMPLETED',
        jobId: result.jobId,
      });

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(workerOutput).not.toContain(apiKey);
    }, 180_000);
  });
});
