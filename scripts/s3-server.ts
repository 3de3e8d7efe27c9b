/**
 * Provisioning of a real S3-compatible server for the object-store tests: SeaweedFS (Apache-2.0),
 * built from its Go module. `go install` refuses it (its go.mod has replace directives), so the
 * module is downloaded with `go mod download`, copied somewhere writable (the module cache is
 * read-only) and built there with `go build ./weed`. The binary lands in the same cache as the
 * Temporal CLI (scripts/servers.ts), so every clone on a machine shares it. Idempotent: a second
 * run only checks that the binary is there.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { cacheDir, type Log, MissingToolError, onPath, run } from './servers';

export const SEAWEEDFS_MODULE = 'github.com/seaweedfs/seaweedfs';
export const SEAWEEDFS_VERSION = 'v0.0.0-20261109003541-7506e5f91cd6';

const binDir = () => path.join(cacheDir(), 'bin');
/** The binary's name carries the version, so a version bump builds afresh instead of reusing. */
export const seaweedfsBinary = () => path.join(binDir(), `weed-${SEAWEEDFS_VERSION}`);

const moduleDownload = z.object({ Dir: z.string().min(1) });

/**
 * The SeaweedFS binary: an explicit SEAWEEDFS_PATH wins, then the cached build; otherwise it is
 * built (about 10 minutes on 2 cores the first time).
 */
export async function ensureSeaweedfs(log: Log): Promise<string> {
  const explicit = process.env.SEAWEEDFS_PATH;
  if (explicit) {
    if (!existsSync(explicit)) throw new Error(`SEAWEEDFS_PATH points at ${explicit}, which does not exist`);
    return explicit;
  }
  const target = seaweedfsBinary();
  if (existsSync(target)) return target;
  if (!onPath('go')) {
    throw new MissingToolError(
      'Go',
      'install Go 1.26 or later (https://go.dev/dl) to build the S3-compatible test server (SeaweedFS)',
    );
  }
  const started = Date.now();
  log(`downloading ${SEAWEEDFS_MODULE}@${SEAWEEDFS_VERSION} from the Go module proxy...`);
  const download = moduleDownload.parse(
    JSON.parse(
      execFileSync('go', ['mod', 'download', '-json', `${SEAWEEDFS_MODULE}@${SEAWEEDFS_VERSION}`], {
        encoding: 'utf8',
        maxBuffer: 16 * 1024 * 1024,
      }),
    ),
  );
  // The module cache is read-only and `go build` writes go.sum entries: build in a copy.
  const workDir = path.join(cacheDir(), 'seaweedfs-src');
  rmSync(workDir, { recursive: true, force: true });
  cpSync(download.Dir, workDir, { recursive: true });
  execFileSync('chmod', ['-R', 'u+w', workDir]);
  mkdirSync(binDir(), { recursive: true });
  log('building SeaweedFS with go build (the first build takes about 10 minutes on 2 cores)...');
  // Built aside and renamed: an interrupted build never leaves a half-written binary in the cache.
  const temporary = `${target}.${process.pid}.tmp`;
  await run('go', ['build', '-o', temporary, './weed'], { cwd: workDir, log });
  renameSync(temporary, target);
  rmSync(workDir, { recursive: true, force: true });
  log(`built ${target} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return target;
}
