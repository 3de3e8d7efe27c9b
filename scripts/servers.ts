/**
 * Provisioning of the two real Temporal servers from the package registries alone: the CLI dev
 * server built from the Go module proxy, and the Java time-skipping test server resolved from
 * Maven Central. The SDK's own download of these binaries needs the open internet, which the
 * machines this project is built on do not have.
 *
 * Everything lands in a cache outside the repo so that every clone on a machine shares it, and
 * every step is idempotent: a second run only checks that the files are there.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

/** `go install` refuses later tags: their go.mod carries a replace directive. */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';
/** The Compose CLI validates docker-compose.yml offline; the binary `go install` makes is named `cmd`. */
export const COMPOSE_MODULE = 'github.com/docker/compose/v2/cmd@v2.29.7';

export type Log = (line: string) => void;

export function cacheDir(): string {
  const base =
    process.env.DURABLE_SERVERLESS_CACHE ??
    path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'durable-serverless');
  mkdirSync(base, { recursive: true });
  return base;
}

const binDir = () => path.join(cacheDir(), 'bin');
const testServerDir = () => path.join(cacheDir(), 'test-server');

export function onPath(command: string): string | undefined {
  try {
    return execFileSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export class MissingToolError extends Error {
  constructor(tool: string, why: string) {
    super(`${tool} is not installed: ${why}`);
    this.name = 'MissingToolError';
  }
}

/** Runs a build step, streaming its output with a prefix so a long first build shows progress. */
export async function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; log: Log },
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const relay = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.trim()) options.log(`  ${command}: ${line}`);
    };
    child.stdout.on('data', relay);
    child.stderr.on('data', relay);
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with ${code}`)),
    );
  });
}

async function goInstall(module: string, binary: string, log: Log): Promise<string> {
  const target = path.join(binDir(), binary);
  if (existsSync(target)) return target;
  if (!onPath('go')) {
    throw new MissingToolError(
      'Go',
      `install Go 1.22 or later (Debian: apt-get install golang) to build ${binary}`,
    );
  }
  log(`building ${module} with go install (the first build takes about 3 minutes on 2 cores)...`);
  const started = Date.now();
  // The module proxy and checksum database are Go's defaults; both answer from this kind of machine.
  await run('go', ['install', module], { env: { GOBIN: binDir() }, log });
  log(`built ${target} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return target;
}

/**
 * The Temporal CLI (dev server). An explicit TEMPORAL_CLI_PATH or a `temporal` on PATH wins over
 * building. Returns undefined when neither Go nor a binary is available, so the caller can fall
 * back to the SDK's own download on a machine that has the internet.
 */
export async function ensureTemporalCli(log: Log): Promise<string | undefined> {
  const explicit = process.env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (!existsSync(explicit))
      throw new Error(`TEMPORAL_CLI_PATH points at ${explicit}, which does not exist`);
    return explicit;
  }
  const cached = path.join(binDir(), 'temporal');
  if (existsSync(cached)) return cached;
  const fromPath = onPath('temporal');
  if (fromPath) return fromPath;
  if (!onPath('go')) {
    log('Go is not installed and no Temporal CLI was found: the SDK will try to download the dev server.');
    log('Without internet, install Go (apt-get install golang) or set TEMPORAL_CLI_PATH.');
    return undefined;
  }
  return goInstall(TEMPORAL_CLI_MODULE, 'temporal', log);
}

/**
 * The Java time-skipping test server behind a launcher that @temporalio/testing spawns as an
 * existing-path executable with the port as its only argument. The launcher must `exec` java:
 * the SDK kills its child on teardown, and a shell in between would leave the JVM running.
 */
export async function ensureTestServer(log: Log): Promise<string> {
  const dir = testServerDir();
  const launcher = path.join(dir, 'temporal-test-server');
  const classpathFile = path.join(dir, 'classpath.txt');
  if (existsSync(launcher) && existsSync(classpathFile)) {
    const jars = readFileSync(classpathFile, 'utf8').trim().split(path.delimiter);
    if (jars.every((jar) => existsSync(jar))) return launcher;
  }
  if (!onPath('java'))
    throw new MissingToolError(
      'Java',
      'install a JDK 11 or later (Debian: apt-get install openjdk-17-jre-headless)',
    );
  if (!onPath('mvn'))
    throw new MissingToolError(
      'Maven',
      'install Maven to fetch the test server (Debian: apt-get install maven)',
    );
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'pom.xml'), readFileSync(path.join(__dirname, 'test-server', 'pom.xml')));
  log('resolving io.temporal:temporal-test-server from Maven Central (about 15 s the first time)...');
  const started = Date.now();
  await run(
    'mvn',
    ['-q', '-B', '-Dstyle.color=never', 'dependency:build-classpath', `-Dmdep.outputFile=${classpathFile}`],
    { cwd: dir, log },
  );
  const classpath = readFileSync(classpathFile, 'utf8').trim();
  // Quoted for sh: Maven repository paths hold no single quotes, but refuse one rather than break the script.
  if (classpath.includes("'"))
    throw new Error('the Maven classpath contains a quote; set MAVEN_OPTS to a simpler local repository');
  writeFileSync(launcher, `#!/bin/sh\nexec java -cp '${classpath}' io.temporal.testserver.TestServer "$@"\n`);
  chmodSync(launcher, 0o755);
  log(`test server ready at ${launcher} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return launcher;
}

/** The Compose CLI, used only to validate docker-compose.yml offline. */
export function ensureComposeCli(log: Log): Promise<string> {
  return goInstall(COMPOSE_MODULE, 'cmd', log);
}

export interface ServerPaths {
  temporalCli?: string;
  testServer: string;
  composeCli?: string;
}

const manifestPath = () => path.join(cacheDir(), 'servers.json');

export async function ensureServers(log: Log, options: { compose?: boolean } = {}): Promise<ServerPaths> {
  const [testServer, temporalCli] = await Promise.all([ensureTestServer(log), ensureTemporalCli(log)]);
  const paths: ServerPaths = { temporalCli, testServer };
  // Keep a Compose CLI built earlier: the demo provisions without it, the tests need it.
  const cachedCompose = path.join(binDir(), 'cmd');
  if (options.compose) paths.composeCli = await ensureComposeCli(log);
  else if (existsSync(cachedCompose)) paths.composeCli = cachedCompose;
  // Written aside and renamed: test files read the manifest while the demo test may rewrite it.
  const temporary = `${manifestPath()}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(paths, null, 2)}\n`);
  renameSync(temporary, manifestPath());
  return paths;
}

/** What the last provisioning found, without building anything: for test setup and the demo. */
export function provisionedServers(): ServerPaths {
  if (!existsSync(manifestPath())) {
    throw new Error(
      'the Temporal servers are not provisioned yet: run `npm run provision` (npm test does it first)',
    );
  }
  return JSON.parse(readFileSync(manifestPath(), 'utf8')) as ServerPaths;
}
