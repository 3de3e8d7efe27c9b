/**
 * `npm run examples [-- name ...]`: every program in examples/ (or those named) against a Temporal
 * dev server and the service emulator started here, each with the environment a deployed worker
 * has. `--check` (`npm run check:examples`, in CI after `npm run build`) first type-checks them
 * against the built package, as a user's project would see it.
 *
 * The examples import only `durable-serverless` and its subpaths; Node resolves those to dist/
 * through the package's own exports (a package may import itself by name).
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { startEmulator } from '../emulator';
import { searchAttributeKeys } from '../workflows/shared/search-attributes';
import { ensureServers } from './servers';

const root = path.resolve(__dirname, '..');
const examplesDir = path.join(root, 'examples');
const say = (line: string) => console.log(`[examples] ${line}`);

/** Where the example's output goes: kept, and printed only when it fails. */
function runExample(file: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('exit', (code) => resolve({ code, output }));
  });
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  const named = args.filter((arg) => !arg.startsWith('--'));
  if (!existsSync(path.join(root, 'dist', 'index.js')))
    throw new Error('dist/ is missing: npm run build first');
  const files = readdirSync(examplesDir)
    .filter((name) => name.endsWith('.ts'))
    .filter((name) => named.length === 0 || named.includes(name.replace(/\.ts$/, '')))
    .sort();
  if (files.length === 0) throw new Error(`no example named ${named.join(', ')}`);

  if (check) {
    const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    await promisify(execFile)(process.execPath, [tsc, '-p', path.join(examplesDir, 'tsconfig.json')], {
      cwd: root,
    }).catch((error: { stdout?: string }) => {
      throw new Error(`the examples do not type-check against dist/:\n${error.stdout ?? String(error)}`);
    });
    say('type-checked against the built package');
  }

  const { temporalCli } = await ensureServers(say);
  const temporal = await TestWorkflowEnvironment.createLocal({
    server: {
      ...(temporalCli ? { executable: { type: 'existing-path' as const, path: temporalCli } } : {}),
      ip: '127.0.0.1',
      searchAttributes: searchAttributeKeys,
      extraArgs: ['--log-level', 'error'],
    },
  });
  const apiKey = randomBytes(24).toString('base64url');
  // One service minute per real second: jobs that "take" minutes end in seconds.
  const emulator = await startEmulator({ accounts: [{ apiKey }], timeScale: 60 });
  const workdir = mkdtempSync(path.join(tmpdir(), 'durable-serverless-examples-'));
  const failed: string[] = [];
  try {
    const endpointId = emulator.control.createEndpoint(apiKey, {
      name: 'examples',
      templateId: 'scripted',
      workersMax: 10,
      flashBootType: 'FLASHBOOT',
    }).id;
    for (const file of files) {
      const name = file.replace(/\.ts$/, '');
      const started = Date.now();
      const { code, output } = await runExample(path.join(examplesDir, file), {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_TASK_QUEUE: `examples-${name}`,
        SERVERLESS_API_KEY: apiKey,
        SERVERLESS_API_URL: emulator.apiUrl,
        SERVERLESS_GRAPHQL_URL: emulator.graphqlUrl,
        SERVERLESS_REST_URL: emulator.restUrl,
        RESULT_STORE_DIR: path.join(workdir, name, 'results'),
        WEBHOOK_PORT: '0',
        WEBHOOK_SECRET: randomBytes(32).toString('base64url'),
        EVENT_SIGNING_SECRETS: `whsec_${randomBytes(32).toString('base64')}`,
        LOG_LEVEL: 'warn',
        ENDPOINT_ID: endpointId,
      });
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      if (code === 0) {
        say(`${name}: ok (${seconds} s)`);
        for (const line of output.trim().split('\n')) if (line.startsWith('[')) console.log(`  ${line}`);
      } else {
        failed.push(name);
        say(`${name}: FAILED with exit code ${code} (${seconds} s):\n${output}`);
      }
    }
  } finally {
    await emulator.close();
    await temporal.teardown();
    rmSync(workdir, { recursive: true, force: true });
  }
  if (failed.length > 0) throw new Error(`${failed.length} example(s) failed: ${failed.join(', ')}`);
  say(`${files.length} example(s) ran`);
}

main().catch((error: unknown) => {
  console.error(`[examples] ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
