/**
 * `npm run provision:prod-temporal`: builds the production-shaped Temporal server (and its SQL
 * tool) and sets up its PostgreSQL template in the cache; see prod-temporal.ts. Idempotent; a
 * cached run only checks files. `--check` also starts an instance from the template, checks that
 * it serves the namespace, and stops it.
 */
import { ensureProdTemporal, startProdTemporal, stopProdTemporal } from './prod-temporal';
import { MissingToolError } from './servers';

async function main(): Promise<void> {
  const started = Date.now();
  const log = (line: string) => console.log(`[prod-temporal] ${line}`);
  const manifest = await ensureProdTemporal(log);
  log(`server:     ${manifest.server} (${manifest.version})`);
  log(`sql tool:   ${manifest.sqlTool}`);
  log(`module:     ${manifest.moduleDir}`);
  log(`postgres:   ${manifest.pgBinDir}`);
  log(`template:   ${manifest.template}`);
  if (process.argv.includes('--check')) {
    const checkStarted = Date.now();
    const instance = await startProdTemporal(manifest);
    log(
      `started at ${instance.address} (PostgreSQL on ${instance.pg.port}) in ${((Date.now() - checkStarted) / 1000).toFixed(1)} s`,
    );
    await stopProdTemporal(instance);
    log('stopped');
  }
  log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((error: unknown) => {
  console.error(`[prod-temporal] ${error instanceof MissingToolError ? error.message : String(error)}`);
  process.exit(1);
});
