/**
 * The production-shaped Temporal: the real server (go.temporal.io/server, the one the
 * docker-compose.yml stack runs) on PostgreSQL, built and set up from the package registries and
 * the machine's own PostgreSQL, for the reliability suite (test/reliability) and anyone who wants
 * to try the library against it.
 *
 * Provisioning (`npm run provision:prod-temporal`, idempotent, cached like scripts/servers.ts):
 *  - `go install` of the server and its SQL tool at TEMPORAL_SERVER_VERSION into the cache;
 *  - a PostgreSQL data directory (a template) with the `temporal` role, both databases at the
 *    server's schema version, the `default` namespace and the library's search attributes. The
 *    template is never run itself: each start copies it to a temporary directory, so runs are
 *    independent of each other (two at once on one machine, or one killed half-way, leave the
 *    template as it was).
 *
 * Starting (`startProdTemporal`) gives an instance that lives in one temporary directory: a
 * private PostgreSQL cluster on a free port (never the machine's own cluster, never a systemd
 * unit) and the server on free ports with a config file written there. Everything about it is
 * in `instance.json` in that directory, so another process can kill and restart either part by
 * pid (the reliability tests do, from their own processes).
 *
 * PostgreSQL refuses to run as root; as root, its commands run as the `postgres` system user
 * (runuser), which Debian's package creates.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { searchAttributeKeys } from '../workflows/shared/search-attributes';
import { dynamicConfigYaml } from './server-settings';
import { cacheDir, type Log, MissingToolError, onPath, run } from './servers';

export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
const SERVER_MODULE = 'go.temporal.io/server';
/** Both come from one module at one version, so one `go install` builds them together. */
const SERVER_PACKAGES = [`${SERVER_MODULE}/cmd/server`, `${SERVER_MODULE}/cmd/tools/sql`].map(
  (pkg) => `${pkg}@${TEMPORAL_SERVER_VERSION}`,
);
export const NAMESPACE = 'default';
/** The role and password of docker-compose.yml; the cluster listens on loopback only. */
const DB_USER = 'temporal';
const DB_PASSWORD = 'temporal';
const DATABASES = { temporal: 'temporal', visibility: 'temporal_visibility' } as const;
/** Fixed at the first start of a cluster: the template's. */
const HISTORY_SHARDS = 4;
/** Minimum PostgreSQL major version of the server's postgres12 plugin. */
const MIN_PG_MAJOR = 12;

const prodDir = () => path.join(cacheDir(), 'prod-temporal');
const prodBinDir = () => path.join(prodDir(), 'bin');
const templateDir = () => path.join(prodDir(), 'pg-template');
const manifestPath = () => path.join(prodDir(), 'manifest.json');

export interface ProdTemporalManifest {
  version: string;
  /** The `server` binary. */
  server: string;
  /** The `sql` binary (temporal-sql-tool). */
  sqlTool: string;
  /** The server module in the Go module cache (read-only): config/ and schema/. */
  moduleDir: string;
  /** PostgreSQL's bin directory (initdb, pg_ctl, postgres, psql). */
  pgBinDir: string;
  /** A PostgreSQL data directory with everything set up; copied on each start, never run. */
  template: string;
  namespace: string;
  searchAttributes: string[];
}

// ------------------------------------------------------------------------------------------------
// PostgreSQL as the right user

const isRoot = () => process.getuid?.() === 0;

interface PgUser {
  /** Set when running as root: commands run as this user through runuser. */
  name?: string;
  uid?: number;
  gid?: number;
}

function pgUser(): PgUser {
  if (!isRoot()) return {};
  let line = '';
  try {
    line = execFileSync('getent', ['passwd', 'postgres'], { encoding: 'utf8' }).trim();
  } catch {
    // handled below
  }
  const [, , uid, gid] = line.split(':');
  if (!uid || !gid) {
    throw new MissingToolError(
      'The postgres system user',
      'PostgreSQL refuses to run as root; install PostgreSQL from the distribution (Debian: apt-get install postgresql), which creates it',
    );
  }
  if (!onPath('runuser'))
    throw new MissingToolError('runuser', 'needed to run PostgreSQL as postgres (Debian: util-linux)');
  return { name: 'postgres', uid: Number(uid), gid: Number(gid) };
}

/** Gives a directory (made by us) to the PostgreSQL user. */
function giveToPg(dir: string, user: PgUser): void {
  if (user.uid !== undefined && user.gid !== undefined) chownSync(dir, user.uid, user.gid);
}

function pgTool(bindir: string, tool: string, args: string[], user: PgUser): [string, string[]] {
  const binary = path.join(bindir, tool);
  return user.name ? ['runuser', ['-u', user.name, '--', binary, ...args]] : [binary, args];
}

/** PostgreSQL's bin directory: PG_BINDIR, Debian's newest /usr/lib/postgresql/N/bin, pg_config, PATH. */
export function findPgBinDir(): string {
  const has = (dir: string) =>
    ['initdb', 'pg_ctl', 'postgres'].every((tool) => existsSync(path.join(dir, tool)));
  const explicit = process.env.PG_BINDIR;
  if (explicit) {
    if (!has(explicit)) throw new Error(`PG_BINDIR=${explicit} has no initdb, pg_ctl and postgres`);
    return explicit;
  }
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((name) => /^\d+$/.test(name) && Number(name) >= MIN_PG_MAJOR)
      .sort((a, b) => Number(b) - Number(a));
    for (const version of versions) {
      const dir = path.join(debian, version, 'bin');
      if (has(dir)) return dir;
    }
  }
  const candidates: string[] = [];
  if (onPath('pg_config')) {
    try {
      candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim());
    } catch {
      // not usable
    }
  }
  const initdb = onPath('initdb');
  if (initdb) {
    try {
      candidates.push(path.dirname(execFileSync('realpath', [initdb], { encoding: 'utf8' }).trim()));
    } catch {
      candidates.push(path.dirname(initdb));
    }
  }
  const found = candidates.find(has);
  if (found) return found;
  throw new MissingToolError(
    'PostgreSQL',
    `install PostgreSQL ${MIN_PG_MAJOR} or later (Debian: apt-get install postgresql) or set PG_BINDIR`,
  );
}

// ------------------------------------------------------------------------------------------------
// Free ports

/**
 * `count` distinct ports nothing listens on now (all held at once, so none repeats), below 32768:
 * the server's PostgreSQL schema keeps membership ports in a smallint, and the kernel's ephemeral
 * range (where port 0 would land) starts at 32768 on Linux, so these do not collide with clients.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  const listen = (port: number) =>
    new Promise<Server | undefined>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(undefined));
      server.listen(port, '127.0.0.1', () => resolve(server));
    });
  try {
    const ports: number[] = [];
    for (let tries = 0; ports.length < count; tries++) {
      if (tries > 1_000) throw new Error('no free ports found between 20000 and 32767');
      const port = 20_000 + Math.floor(Math.random() * 12_768);
      if (ports.includes(port)) continue;
      const server = await listen(port);
      if (!server) continue;
      servers.push(server);
      ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

// ------------------------------------------------------------------------------------------------
// Provisioning

function goModuleDir(): string {
  const modCache = execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim();
  return path.join(modCache, `${SERVER_MODULE}@${TEMPORAL_SERVER_VERSION}`);
}

async function ensureServerBinaries(
  log: Log,
): Promise<Pick<ProdTemporalManifest, 'server' | 'sqlTool' | 'moduleDir'>> {
  const server = path.join(prodBinDir(), 'server');
  const sqlTool = path.join(prodBinDir(), 'sql');
  if (!onPath('go')) {
    // The module cache is Go's; without Go there is no way to find the schema either.
    throw new MissingToolError(
      'Go',
      'install Go 1.22 or later (Debian: apt-get install golang) to build the Temporal server',
    );
  }
  if (!existsSync(server) || !existsSync(sqlTool) || !existsSync(goModuleDir())) {
    log(`building ${SERVER_PACKAGES.join(' and ')} (about 2 minutes once the CLI's modules are cached)...`);
    const started = Date.now();
    await run('go', ['install', ...SERVER_PACKAGES], { env: { GOBIN: prodBinDir() }, log });
    log(`built the server and its SQL tool in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  const moduleDir = goModuleDir();
  for (const needed of [
    'schema/postgresql/v12/temporal/versioned',
    'config/dynamicconfig/development-sql.yaml',
  ]) {
    if (!existsSync(path.join(moduleDir, needed))) throw new Error(`${moduleDir} has no ${needed}`);
  }
  return { server, sqlTool, moduleDir };
}

/** Runs a set-up step quietly; its output is in the error when it fails. */
async function quietly(command: string, args: string[], options: { cwd?: string } = {}): Promise<void> {
  const lines: string[] = [];
  try {
    await run(command, args, { ...options, log: (line) => lines.push(line) });
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${lines.slice(-30).join('\n')}`);
  }
}

/**
 * One-off sets up a fresh data directory in `work` (initdb, role, databases, schemas, namespace,
 * search attributes) and moves it to the template's place.
 */
async function buildTemplate(
  binaries: Pick<ProdTemporalManifest, 'server' | 'sqlTool' | 'moduleDir'>,
  pgBinDir: string,
  log: Log,
): Promise<void> {
  const user = pgUser();
  const started = Date.now();
  const work = mkdtempSync(path.join(tmpdir(), 'durable-serverless-template-'));
  const pgDir = path.join(work, 'pg');
  const dataDir = path.join(pgDir, 'data');
  chmodSync(work, 0o755);
  mkdirSync(pgDir, { mode: 0o700 });
  giveToPg(pgDir, user);
  try {
    log('initdb: a private PostgreSQL cluster for the template...');
    const [initdb, initdbArgs] = pgTool(
      pgBinDir,
      'initdb',
      ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
      user,
    );
    await quietly(initdb, initdbArgs, { cwd: '/' });

    const [pgPort] = await freePorts(1);
    const pg = { pgBinDir, dataDir, logFile: path.join(pgDir, 'postgres.log'), port: pgPort as number, user };
    await startPostgres(pg);
    try {
      const psql = onPath('psql') ?? path.join(pgBinDir, 'psql');
      execFileSync(
        psql,
        [
          '-h',
          '127.0.0.1',
          '-p',
          String(pg.port),
          '-U',
          'postgres',
          '-d',
          'postgres',
          '-v',
          'ON_ERROR_STOP=1',
          '-q',
          '-c',
          `CREATE ROLE ${DB_USER} WITH LOGIN SUPERUSER PASSWORD '${DB_PASSWORD}'`,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      const sql = (database: string, ...args: string[]) =>
        quietly(binaries.sqlTool, [
          '--plugin',
          'postgres12',
          '--ep',
          '127.0.0.1',
          '-p',
          String(pg.port),
          '-u',
          DB_USER,
          '--pw',
          DB_PASSWORD,
          '--db',
          database,
          ...args,
        ]);
      const schema = path.join(binaries.moduleDir, 'schema/postgresql/v12');
      for (const [kind, database] of Object.entries(DATABASES)) {
        log(`schema: ${database} (create-database, setup-schema -v 0.0, update-schema)`);
        await sql(database, 'create-database');
        await sql(database, 'setup-schema', '-v', '0.0');
        await sql(database, 'update-schema', '-d', path.join(schema, kind, 'versioned'));
      }

      // The first start fixes the cluster's metadata (shard count); then the namespace and the
      // search attributes, as docker-compose.yml's temporal-setup does.
      const [frontend, ...others] = await freePorts(9);
      const ports = portsFrom(frontend as number, others);
      const runDir = work;
      writeServerConfig(runDir, binaries.moduleDir, ports, pg.port);
      const server = spawnServer(binaries.server, runDir);
      try {
        const address = `127.0.0.1:${ports.frontendGrpc}`;
        await waitForServer(address, runDir, () => server.exitCode === null && server.signalCode === null, {
          namespace: false,
        });
        await registerNamespaceAndAttributes(address, log);
      } finally {
        await stopChild(server);
      }
    } finally {
      stopPostgres(pg, 'fast');
    }

    // Moved into the cache (which the PostgreSQL user may not be able to reach: root's home is
    // private). cp -a keeps the owner and modes; the rename makes the template appear whole.
    mkdirSync(prodDir(), { recursive: true });
    const staging = `${templateDir()}.${process.pid}.tmp`;
    rmSync(staging, { recursive: true, force: true });
    execFileSync('cp', ['-a', dataDir, staging]);
    rmSync(templateDir(), { recursive: true, force: true });
    renameSync(staging, templateDir());
    log(`template ready at ${templateDir()} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function registerNamespaceAndAttributes(address: string, log: Log): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    log(`namespace ${NAMESPACE} and search attributes ${searchAttributeKeys.map((k) => k.name).join(', ')}`);
    await connection.workflowService.registerNamespace({
      namespace: NAMESPACE,
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
    // IndexedValueType of temporal.api.enums.v1 (the proto package is not a direct dependency).
    const indexedValueType = { KEYWORD: 2, KEYWORD_LIST: 7 } as const;
    const searchAttributes: Record<string, number> = {};
    for (const key of searchAttributeKeys) {
      const type = indexedValueType[key.type as keyof typeof indexedValueType];
      if (type === undefined) throw new Error(`no IndexedValueType for search attribute type ${key.type}`);
      searchAttributes[key.name] = type;
    }
    // The namespace reaches every service's cache within its refresh interval (10 s).
    await retry(
      () => connection.operatorService.addSearchAttributes({ namespace: NAMESPACE, searchAttributes }),
      60_000,
    );
    await retry(async () => {
      const listed = await connection.operatorService.listSearchAttributes({ namespace: NAMESPACE });
      const missing = searchAttributeKeys.filter((key) => !(key.name in (listed.customAttributes ?? {})));
      if (missing.length) throw new Error(`search attributes not listed yet: ${missing.map((k) => k.name)}`);
    }, 60_000);
  } finally {
    await connection.close();
  }
}

async function retry<T>(attempt: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/**
 * Makes sure the server, its SQL tool and the set-up PostgreSQL template are in the cache, and
 * writes the manifest. A cached run checks files only.
 */
export async function ensureProdTemporal(log: Log): Promise<ProdTemporalManifest> {
  const pgBinDir = findPgBinDir();
  pgUser(); // as root: fail now, in one line, if PostgreSQL cannot run at all
  const binaries = await ensureServerBinaries(log);
  const cached = readManifest();
  const templateOk =
    existsSync(path.join(templateDir(), 'PG_VERSION')) &&
    cached?.version === TEMPORAL_SERVER_VERSION &&
    cached.template === templateDir();
  // A template made by another PostgreSQL major version cannot be started by this one.
  const pgMajor = execFileSync(path.join(pgBinDir, 'postgres'), ['--version'], { encoding: 'utf8' }).match(
    /(\d+)(?:\.\d+)*/,
  )?.[1];
  const templateMajor = templateOk ? readFileSync(path.join(templateDir(), 'PG_VERSION'), 'utf8').trim() : '';
  if (!templateOk || templateMajor !== pgMajor) await buildTemplate(binaries, pgBinDir, log);
  const manifest: ProdTemporalManifest = {
    version: TEMPORAL_SERVER_VERSION,
    ...binaries,
    pgBinDir,
    template: templateDir(),
    namespace: NAMESPACE,
    searchAttributes: searchAttributeKeys.map((key) => key.name),
  };
  const temporary = `${manifestPath()}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(manifest, null, 2)}\n`);
  renameSync(temporary, manifestPath());
  return manifest;
}

function readManifest(): ProdTemporalManifest | undefined {
  if (!existsSync(manifestPath())) return undefined;
  try {
    return JSON.parse(readFileSync(manifestPath(), 'utf8')) as ProdTemporalManifest;
  } catch {
    return undefined;
  }
}

// ------------------------------------------------------------------------------------------------
// PostgreSQL processes

interface PgCluster {
  pgBinDir: string;
  dataDir: string;
  logFile: string;
  port: number;
  user: PgUser;
}

function postgresOptions(port: number): string {
  // pg_ctl hands these to a shell. fsync off: a test cluster on a shared disk; a crash of
  // PostgreSQL (not of the machine) loses nothing, synchronous_commit stays on.
  return [
    `-p ${port}`,
    "-c listen_addresses='127.0.0.1'",
    "-c unix_socket_directories=''",
    '-c fsync=off',
    '-c max_connections=300',
  ].join(' ');
}

async function startPostgres(pg: PgCluster): Promise<void> {
  const [command, args] = pgTool(
    pg.pgBinDir,
    'pg_ctl',
    ['-D', pg.dataDir, '-l', pg.logFile, '-w', '-t', '60', '-o', postgresOptions(pg.port), 'start'],
    pg.user,
  );
  try {
    execFileSync(command, args, { cwd: '/', stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    throw new Error(`PostgreSQL did not start: ${String(error)}\n${tail(pg.logFile)}`);
  }
}

function stopPostgres(pg: PgCluster, mode: 'fast' | 'immediate'): void {
  const [command, args] = pgTool(
    pg.pgBinDir,
    'pg_ctl',
    ['-D', pg.dataDir, '-w', '-t', '60', '-m', mode, 'stop'],
    pg.user,
  );
  try {
    execFileSync(command, args, { cwd: '/', stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    // Already stopped is fine; anything else is worth a look.
    if (existsSync(path.join(pg.dataDir, 'postmaster.pid'))) throw error;
  }
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

// ------------------------------------------------------------------------------------------------
// The server

interface ServerPorts {
  frontendGrpc: number;
  frontendMembership: number;
  frontendHttp: number;
  historyGrpc: number;
  historyMembership: number;
  matchingGrpc: number;
  matchingMembership: number;
  workerGrpc: number;
  workerMembership: number;
}

function portsFrom(frontendGrpc: number, others: number[]): ServerPorts {
  const [
    frontendMembership,
    frontendHttp,
    historyGrpc,
    historyMembership,
    matchingGrpc,
    matchingMembership,
    workerGrpc,
    workerMembership,
  ] = others as [number, number, number, number, number, number, number, number];
  return {
    frontendGrpc,
    frontendMembership,
    frontendHttp,
    historyGrpc,
    historyMembership,
    matchingGrpc,
    matchingMembership,
    workerGrpc,
    workerMembership,
  };
}

const CONFIG_ENV = 'durable-serverless';

/**
 * The module's development-postgres12.yaml with our ports and database address; no metrics or
 * pprof listeners, archival off. The dynamic config is the module's development-sql.yaml plus
 * search attributes read through the cache at once and the project's settings (server-settings.ts).
 */
function writeServerConfig(runDir: string, moduleDir: string, ports: ServerPorts, pgPort: number): void {
  const configDir = path.join(runDir, 'config');
  mkdirSync(configDir, { recursive: true });
  const dynamicConfig = path.join(configDir, 'dynamicconfig.yaml');
  writeFileSync(
    dynamicConfig,
    `${readFileSync(path.join(moduleDir, 'config/dynamicconfig/development-sql.yaml'), 'utf8')}\n` +
      'system.forceSearchAttributesCacheRefreshOnRead:\n  - value: true\n' +
      dynamicConfigYaml(),
  );
  const store = (database: string, maxConns: number) => `      sql:
        pluginName: "postgres12"
        databaseName: "${database}"
        connectAddr: "127.0.0.1:${pgPort}"
        connectProtocol: "tcp"
        user: "${DB_USER}"
        password: "${DB_PASSWORD}"
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: "1h"`;
  const service = (grpc: number, membership: number, http?: number) => `    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true${http ? `\n      httpPort: ${http}` : ''}`;
  writeFileSync(
    path.join(configDir, `${CONFIG_ENV}.yaml`),
    `# Written by scripts/prod-temporal.ts from the server module's config/development-postgres12.yaml.
log:
  stdout: true
  level: warn

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: ${HISTORY_SHARDS}
  datastores:
    postgres-default:
${store(DATABASES.temporal, 20)}
    postgres-visibility:
${store(DATABASES.visibility, 10)}

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"

services:
  frontend:
${service(ports.frontendGrpc, ports.frontendMembership, ports.frontendHttp)}
  matching:
${service(ports.matchingGrpc, ports.matchingMembership)}
  history:
${service(ports.historyGrpc, ports.historyMembership)}
  worker:
${service(ports.workerGrpc, ports.workerMembership)}

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:${ports.frontendGrpc}"

dcRedirectionPolicy:
  policy: "noop"

archival:
  history:
    state: "disabled"
  visibility:
    state: "disabled"

namespaceDefaults:
  archival:
    history:
      state: "disabled"
    visibility:
      state: "disabled"

dynamicConfigClient:
  filepath: "${dynamicConfig}"
  pollInterval: "10s"
`,
  );
}

function spawnServer(server: string, runDir: string): ChildProcess {
  const logFd = openSync(path.join(runDir, 'temporal.log'), 'a');
  try {
    const child = spawn(
      server,
      ['--root', runDir, '--config', 'config', '--env', CONFIG_ENV, '--allow-no-auth', 'start'],
      // Detached: the server outlives the process that (re)started it; its instance owns it.
      { cwd: runDir, detached: true, stdio: ['ignore', logFd, logFd] },
    );
    child.unref();
    return child;
  } finally {
    closeSync(logFd);
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Waits until the frontend answers health checks (and, unless told otherwise, knows the namespace). */
async function waitForServer(
  address: string,
  runDir: string,
  alive: () => boolean,
  options: { namespace: boolean; timeoutMs?: number } = { namespace: true },
): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  let last: unknown;
  for (;;) {
    if (!alive())
      throw new Error(
        `the Temporal server exited while starting:\n${tail(path.join(runDir, 'temporal.log'))}`,
      );
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        const health = await connection.healthService.check({
          service: 'temporal.api.workflowservice.v1.WorkflowService',
        });
        if (health.status !== 1) throw new Error(`health status ${health.status}`);
        if (options.namespace) await connection.workflowService.describeNamespace({ namespace: NAMESPACE });
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `the Temporal server at ${address} did not become ready: ${String(last)}\n${tail(path.join(runDir, 'temporal.log'))}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

// ------------------------------------------------------------------------------------------------
// Instances

/** Everything needed to control a running instance, from any process (JSON-serialisable). */
export interface ProdTemporalInstance {
  runDir: string;
  /** host:port of the frontend. */
  address: string;
  namespace: string;
  server: string;
  pg: { pgBinDir: string; dataDir: string; logFile: string; port: number; user: PgUser };
}

const pidFile = (instance: ProdTemporalInstance) => path.join(instance.runDir, 'temporal.pid');

/** Alive and not a zombie (a killed child of a process that has not reaped it yet). */
function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

/** The server's pid, when the process with that pid is this instance's server. */
function serverPid(instance: ProdTemporalInstance): number | undefined {
  if (!existsSync(pidFile(instance))) return undefined;
  const pid = Number(readFileSync(pidFile(instance), 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return undefined;
  try {
    // Never signal a recycled pid: the command line must name this instance's directory.
    if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(instance.runDir)) return undefined;
  } catch {
    // no /proc: trust the pid file
  }
  return pid;
}

/** Starts the server of an instance whose server is not running, and waits until it serves. */
export async function startTemporalServer(instance: ProdTemporalInstance): Promise<void> {
  if (serverPid(instance) !== undefined) throw new Error('the Temporal server of this instance is running');
  const child = spawnServer(instance.server, instance.runDir);
  if (child.pid === undefined) throw new Error(`could not start ${instance.server}`);
  writeFileSync(pidFile(instance), String(child.pid));
  const pid = child.pid;
  await waitForServer(instance.address, instance.runDir, () => processAlive(pid));
}

/** SIGKILL: no graceful shutdown, shard leases and in-flight requests abandoned. */
export async function killTemporalServer(instance: ProdTemporalInstance): Promise<void> {
  const pid = serverPid(instance);
  if (pid === undefined) return;
  process.kill(pid, 'SIGKILL');
  const deadline = Date.now() + 10_000;
  while (processAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`the Temporal server (pid ${pid}) survived SIGKILL`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function stopTemporalServer(instance: ProdTemporalInstance): Promise<void> {
  const pid = serverPid(instance);
  if (pid === undefined) return;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 15_000;
  while (processAlive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * PostgreSQL stopped as a crash would (`pg_ctl stop -m immediate`: every backend quits at once, no
 * checkpoint; the next start replays the WAL).
 */
export function stopPostgresAsInACrash(instance: ProdTemporalInstance): void {
  stopPostgres(instance.pg, 'immediate');
}

/** PostgreSQL started again on the same port, after stopPostgresAsInACrash. */
export async function startPostgresAgain(instance: ProdTemporalInstance): Promise<void> {
  await startPostgres(instance.pg);
}

/**
 * A fresh instance from the provisioned template: PostgreSQL and the server on free ports, in a
 * temporary directory of its own. Resolves once the server serves the namespace.
 */
export async function startProdTemporal(manifest: ProdTemporalManifest): Promise<ProdTemporalInstance> {
  const user = pgUser();
  const runDir = mkdtempSync(
    path.join(tmpdir(), `durable-serverless-temporal-${randomBytes(2).toString('hex')}-`),
  );
  chmodSync(runDir, 0o755);
  const pgDir = path.join(runDir, 'pg');
  mkdirSync(pgDir, { mode: 0o700 });
  giveToPg(pgDir, user);
  const dataDir = path.join(pgDir, 'data');
  // cp -a keeps the template's owner (the PostgreSQL user) and its 0700 mode.
  execFileSync('cp', ['-a', manifest.template, dataDir]);
  const [pgPort, frontend, ...others] = await freePorts(10);
  const ports = portsFrom(frontend as number, others);
  const instance: ProdTemporalInstance = {
    runDir,
    address: `127.0.0.1:${ports.frontendGrpc}`,
    namespace: manifest.namespace,
    server: manifest.server,
    pg: {
      pgBinDir: manifest.pgBinDir,
      dataDir,
      logFile: path.join(pgDir, 'postgres.log'),
      port: pgPort as number,
      user,
    },
  };
  writeFileSync(path.join(runDir, 'instance.json'), `${JSON.stringify(instance, null, 2)}\n`);
  try {
    await startPostgres(instance.pg);
    writeServerConfig(runDir, manifest.moduleDir, ports, instance.pg.port);
    await startTemporalServer(instance);
    return instance;
  } catch (error) {
    await stopProdTemporal(instance);
    throw error;
  }
}

/** Stops the server (SIGTERM, then SIGKILL), PostgreSQL, and removes the instance's directory. */
export async function stopProdTemporal(
  instance: ProdTemporalInstance,
  options: { keep?: boolean } = {},
): Promise<void> {
  try {
    await stopTemporalServer(instance);
  } finally {
    try {
      if (existsSync(path.join(instance.pg.dataDir, 'postmaster.pid'))) stopPostgres(instance.pg, 'fast');
    } finally {
      if (!options.keep) rmSync(instance.runDir, { recursive: true, force: true });
    }
  }
}

/** The manifest of the last provisioning, without building anything. */
export function provisionedProdTemporal(): ProdTemporalManifest {
  const manifest = readManifest();
  if (!manifest || !existsSync(manifest.template) || !existsSync(manifest.server)) {
    throw new Error(
      'the production-shaped Temporal is not provisioned yet: run `npm run provision:prod-temporal`',
    );
  }
  return manifest;
}

/** The server's log so far (for a failing test's message). */
export function serverLogTail(instance: ProdTemporalInstance, lines = 40): string {
  return tail(path.join(instance.runDir, 'temporal.log'), lines);
}
