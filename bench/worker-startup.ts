/**
 * Worker start-up time: the built package's worker loading the prebuilt workflow bundle
 * (dist/workflow-bundle.js, what production runs) against the same worker bundling the workflows
 * at start, and the sources run through tsx as `npm run worker` runs them. Each run is a fresh
 * process; the figures are the time from spawn to runWorker's ready callback (connected,
 * workflows loaded, polling) and the process's peak memory by then. Prints figures; asserts
 * nothing. Needs dist/ (npm run build).
 *
 *   npm run build && npm run bench:worker-startup      (BENCH_RUNS=5 by default)
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { provisionedServers } from '../scripts/servers';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const root = path.resolve(__dirname, '..');

interface Mode {
  name: string;
  args: string[];
}

/** A process that runs runWorker from `entry` (dist/ or the sources) and reports when it is ready. */
function workerScript(
  dir: string,
  name: string,
  entry: string,
  workflowBundlePath: 'default' | false,
): string {
  const script = path.join(dir, `${name}.js`);
  writeFileSync(
    script,
    `const { runWorker, loadWorkerConfig } = require(${JSON.stringify(entry)});
const { Runtime, DefaultLogger } = require(${JSON.stringify(path.join(root, 'node_modules/@temporalio/worker'))});
Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
const controller = new AbortController();
process.on('SIGTERM', () => controller.abort());
runWorker(loadWorkerConfig(), {
  signal: controller.signal,
  logger: require(${JSON.stringify(path.join(path.dirname(entry), 'logger'))}).createLogger({ level: 'error' }),
  ${workflowBundlePath === false ? 'workflowBundlePath: false,' : ''}
  onReady: (info) => console.log(JSON.stringify({
    msg: 'ready', workflows: info.workflows, maxRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  })),
}).then(() => process.exit(0), (error) => { console.error(error); process.exit(1); });
`,
  );
  return script;
}

/** Spawn to ready, then SIGTERM; the child reports its own peak memory (maxRSS). */
async function measure(
  mode: Mode,
  env: NodeJS.ProcessEnv,
): Promise<{ ms: number; workflows: string; maxRssMiB: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, mode.args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => {
    errors += chunk.toString();
  });
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const found = output.split('\n').find((candidate) => candidate.includes('"ready"'));
      if (found) resolve(found);
    });
    child.on('exit', (code) => reject(new Error(`${mode.name} exited with ${code}: ${errors}`)));
  });
  const ms = performance.now() - started;
  child.kill('SIGTERM');
  await new Promise((resolve) => child.on('exit', resolve));
  const { workflows, maxRssMiB } = JSON.parse(line) as { workflows: string; maxRssMiB: number };
  return { ms, workflows, maxRssMiB };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

async function main(): Promise<void> {
  if (!existsSync(path.join(root, 'dist/workflow-bundle.js'))) {
    throw new Error('no dist/workflow-bundle.js: run npm run build first');
  }
  const { temporalCli } = provisionedServers();
  const server = await TestWorkflowEnvironment.createLocal({
    server: {
      ...(temporalCli ? { executable: { type: 'existing-path' as const, path: temporalCli } } : {}),
      ip: '127.0.0.1',
      extraArgs: ['--log-level', 'error', '--headless'],
    },
  });
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-worker-startup-'));
  try {
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: 'bench-worker-startup',
      SERVERLESS_API_KEY: 'bench-key',
      SERVERLESS_API_URL: 'http://127.0.0.1:9/v2',
      SERVERLESS_GRAPHQL_URL: 'http://127.0.0.1:9/graphql',
      SERVERLESS_REST_URL: 'http://127.0.0.1:9/v1',
      RESULT_STORE_DIR: path.join(dir, 'results'),
    };
    const dist = path.join(root, 'dist/worker/index.js');
    const sources = path.join(root, 'worker/index.ts');
    const modes: Mode[] = [
      { name: 'dist/, prebuilt bundle (production)', args: [workerScript(dir, 'prebuilt', dist, 'default')] },
      { name: 'dist/, bundling at start', args: [workerScript(dir, 'bundling', dist, false)] },
      {
        name: 'sources through tsx, bundling at start (npm run worker)',
        args: ['--import', 'tsx', workerScript(dir, 'tsx', sources, false)],
      },
    ];
    console.log(`worker start-up, spawn to ready, ${RUNS} runs each: median (min-max), peak RSS median`);
    for (const mode of modes) {
      const times: number[] = [];
      const memory: number[] = [];
      let workflows = '';
      for (let i = 0; i < RUNS; i++) {
        const result = await measure(mode, env);
        times.push(result.ms);
        memory.push(result.maxRssMiB);
        workflows = result.workflows;
      }
      console.log(
        `  ${mode.name.padEnd(56)} ${median(times).toFixed(0).padStart(6)} ms ` +
          `(${Math.min(...times).toFixed(0)}-${Math.max(...times).toFixed(0)}), ${median(memory)} MiB [${workflows}]`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.teardown();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
