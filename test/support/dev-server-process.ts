/**
 * A Temporal dev server of a test file's own (`temporal server start-dev`, the CLI that
 * scripts/servers.ts provisions), as a child process the file may SIGKILL and start again: its
 * state lives in a SQLite file (`--db-filename`), so a restart finds every workflow where the kill
 * left it. The shared dev server of global-setup.ts keeps its state in memory and is never killed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePorts } from '../../scripts/prod-temporal';
import { dynamicConfigFlags } from '../../scripts/server-settings';
import { provisionedServers } from '../../scripts/servers';
import { searchAttributeFlags } from './search-attributes';
import { untilServerAnswers } from './server-ready';

export interface DevServerProcessOptions {
  /**
   * Dynamic config values (`--dynamic-config-value KEY=JSON`), at every start: e.g.
   * `{ 'frontend.namespaceCount': 20 }`. Each value is written as JSON.
   */
  dynamicConfig?: Record<string, unknown>;
  /** State in memory instead of the SQLite file: faster, but a restart finds nothing. */
  inMemory?: boolean;
  /** Serve the web UI too (at `uiUrl`), for a browser test; headless otherwise. */
  ui?: boolean;
}

export interface DevServerProcess {
  /** host:port of its frontend, the same across restarts. */
  address: string;
  /** The web UI (`http://127.0.0.1:PORT`), when started with `ui`. */
  uiUrl?: string;
  /** Its Prometheus metrics (`http://127.0.0.1:PORT/metrics`), the same across restarts. */
  metricsUrl: string;
  /** The SQLite file that holds its state. */
  dbFile: string;
  /** The running process (a new one after each start). */
  child(): ChildProcess | undefined;
  /** SIGKILL: a crash, nothing flushed beyond what SQLite had committed. */
  kill(): Promise<void>;
  /** Starts it again on the same port and database file; resolves once it answers. */
  start(): Promise<void>;
  /** Stops it (SIGTERM) and removes its database. */
  close(): Promise<void>;
  /** The last lines it wrote (every start's). */
  output(): string;
}

/**
 * Starts a dev server on free ports (gRPC, HTTP API, metrics; no UI) with the library's search
 * attributes (and `options.dynamicConfig`, if any), its state in a fresh temporary SQLite file;
 * resolves once it answers a call on the `default` namespace.
 */
export async function startDevServerProcess(
  name: string,
  options: DevServerProcessOptions = {},
): Promise<DevServerProcess> {
  const { temporalCli } = provisionedServers();
  if (!temporalCli)
    throw new Error(
      'no Temporal CLI is provisioned (the SDK download fallback gives no binary to restart): ' +
        'run npm run provision, or set TEMPORAL_CLI_PATH',
    );
  const dir = mkdtempSync(path.join(tmpdir(), `dev-server-${name}-`));
  const dbFile = path.join(dir, 'temporal.sqlite');
  const [port, httpPort, metricsPort, uiPort] = (await freePorts(4)) as [number, number, number, number];
  const address = `127.0.0.1:${port}`;
  const args = [
    'server',
    'start-dev',
    ...(options.inMemory ? [] : ['--db-filename', dbFile]),
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--http-port',
    String(httpPort),
    '--metrics-port',
    String(metricsPort),
    ...(options.ui ? ['--ui-port', String(uiPort)] : ['--headless']),
    '--log-level',
    'error',
    // Registered again at every start: the CLI accepts attributes that already exist.
    ...searchAttributeFlags(),
    // The project's server settings (scripts/server-settings.ts), with the test's own on top.
    ...dynamicConfigFlags(options.dynamicConfig),
  ];

  let lines: string[] = [];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const output = () => lines.join('');
  const gone = () => !child || child.exitCode !== null || child.signalCode !== null;

  async function start(): Promise<void> {
    if (!gone()) throw new Error(`the dev server at ${address} is still running`);
    const started = spawn(temporalCli as string, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    exited = new Promise<void>((resolve) => started.once('exit', () => resolve()));
    const take = (chunk: Buffer) => {
      lines.push(chunk.toString());
      if (lines.length > 200) lines = lines.slice(-100);
    };
    started.stdout?.on('data', take);
    started.stderr?.on('data', take);
    // A call on the default namespace: the frontend and persistence are both up.
    await untilServerAnswers(
      address,
      () => (started.exitCode !== null || started.signalCode !== null ? output() : undefined),
      (connection) => connection.workflowService.describeNamespace({ namespace: 'default' }),
    );
  }

  async function kill(): Promise<void> {
    if (!gone()) child?.kill('SIGKILL');
    await exited;
  }

  await start();
  return {
    address,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    ...(options.ui ? { uiUrl: `http://127.0.0.1:${uiPort}` } : {}),
    dbFile,
    child: () => child,
    kill,
    start,
    async close() {
      if (!gone()) {
        child?.kill('SIGTERM');
        const timer = setTimeout(() => child?.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
    output,
  };
}
