/**
 * `npm run provision:s3` (and `npm run provision`, which calls it): builds the S3-compatible
 * test server (SeaweedFS) into the cache outside the repo; see s3-server.ts. Idempotent; a cached
 * run only checks the file.
 */
import { ensureSeaweedfs } from './s3-server';
import { MissingToolError } from './servers';

async function main(): Promise<void> {
  const started = Date.now();
  const log = (line: string) => console.log(`[provision-s3] ${line}`);
  log(`seaweedfs:     ${await ensureSeaweedfs(log)}`);
  log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((error: unknown) => {
  console.error(`[provision-s3] ${error instanceof MissingToolError ? error.message : String(error)}`);
  process.exit(1);
});
